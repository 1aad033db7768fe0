from django.contrib import admin
from django.urls import include, path

from supportbot import operations, views

# Django tries the patterns in order: the customer routes (every question) come first, the staff
# pages last.
urlpatterns = [
    path("api/t/<slug:tenant>/ask", views.api_ask, name="api-ask"),
    path("t/<slug:tenant>/ask", views.chat_submit, name="chat-submit"),
    path("t/<slug:tenant>/stream/<str:ask_id>", views.chat_stream, name="chat-stream"),
    path("t/<slug:tenant>/", views.chat_page, name="chat"),
    path("t/<slug:tenant>/start-over", views.chat_start_over, name="chat-start-over"),
    path("t/<slug:tenant>/sign-in", views.chat_sign_in, name="chat-sign-in"),
    path("api/t/<slug:tenant>/feedback", views.api_feedback, name="api-feedback"),
    path("t/<slug:tenant>/feedback/<uuid:request_id>", views.chat_feedback, name="chat-feedback"),
    path("api/t/<slug:tenant>/customer-token", views.api_customer_token, name="api-customer-token"),
    path("api/openapi.yaml", views.openapi_schema, name="api-openapi"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", operations.metrics_view, name="metrics"),
    # Staff pages live inside the admin; before it, or its catch-all would answer them.
    path("admin/ask/", include("supportbot.staff.urls")),
    path("admin/", admin.site.urls),
]
