"""The owner's emails about an endpoint (templates/webhooks/email/): the warning while it keeps
failing, the notice that it was disabled, and the digest of its dead letters. Sent outside any
transaction; a mail failure is logged and the state stays visible in the API and the admin.
Never a secret in them."""

import logging
import smtplib

from django.core.mail import send_mail
from django.template.loader import render_to_string

from webhooks.models import WebhookEndpoint

log = logging.getLogger(__name__)


def email_owner(endpoint: WebhookEndpoint, template: str, **context) -> bool:
    """Render templates/webhooks/email/<template>.txt (its first line the subject) for the
    endpoint's merchant and send it. -> whether it was handed to the mail server."""
    context = {"endpoint": endpoint, "mode": "live" if endpoint.livemode else "test", **context}
    subject, _, body = render_to_string(f"webhooks/email/{template}.txt", context).partition("\n")
    try:
        send_mail(
            subject=subject.strip(),
            message=body.strip() + "\n",
            from_email=None,
            recipient_list=[endpoint.merchant.email],
        )
    except (smtplib.SMTPException, OSError):
        log.exception("%s email for endpoint %s failed", template, endpoint.id)
        return False
    return True
