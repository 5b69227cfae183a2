from django.db import models


class Item(models.Model):
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
