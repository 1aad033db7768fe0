"""Staff pages inside the Django admin: dashboard, review queue, labelling, calibration."""
