from django.contrib import admin
from django.urls import path

from supportbot import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("t/<slug:tenant>/", views.chat_page, name="chat"),
    path("t/<slug:tenant>/ask", views.chat_submit, name="chat-submit"),
    path("t/<slug:tenant>/stream/<str:ask_id>", views.chat_stream, name="chat-stream"),
    path("api/t/<slug:tenant>/ask", views.api_ask, name="api-ask"),
]
