"""One endpoint: validate, insert one row, enqueue one task after commit."""

from typing import Any

from celery import Celery
from django.conf import settings
from django.db import transaction
from django.urls import path
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from perf.minimal.models import Item

app = Celery("bench-minimal", broker=settings.CELERY_BROKER_URL)


class ItemSerializer(serializers.Serializer[Any]):
    nodes = serializers.ListField(child=serializers.IntegerField())
    suite = serializers.CharField()


class ItemView(APIView):
    def post(self, request: Request) -> Response:
        body = ItemSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        with transaction.atomic():
            item = Item.objects.create(payload=body.validated_data)
            transaction.on_commit(lambda: app.send_task("perf.minimal.noop", args=[item.pk],
                                                        queue="bench-minimal"))
        return Response({"id": item.pk}, status=202)


urlpatterns = [path("items", ItemView.as_view())]
