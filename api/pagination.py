"""Cursor pages for every list: no request asks the database for an unbounded list."""

from __future__ import annotations

from rest_framework.pagination import CursorPagination


class NewestFirst(CursorPagination):
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"
    ordering = "-id"


class OldestFirst(NewestFirst):
    ordering = "id"
