from django.urls import path

from supportbot.staff import views

app_name = "staff"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("mode/<slug:tenant>", views.mode_set, name="mode"),
    path("queue/", views.review_queue, name="queue"),
    path("queue/<int:pk>/<str:action>", views.review_action, name="review-action"),
    path("label/", views.label_page, name="label"),
    path("label/<int:pk>", views.label_submit, name="label-submit"),
    path("calibration/", views.calibration_page, name="calibration"),
    path("calibration/apply", views.threshold_apply, name="threshold-apply"),
    path("calibration/uploads/<int:pk>", views.calibration_upload_status, name="calibration-upload"),
    path("calibration/judge/<slug:tenant>", views.judge_recalibrate, name="judge-recalibrate"),
    path("gaps/", views.content_gaps_page, name="gaps"),
]
