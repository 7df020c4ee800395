# The service's image: one image, every process (docs/production.md "Containers").
# Its install and start steps are scripts/install.sh and scripts/serve.py, which CI runs; the
# image build itself is NOT exercised on our machines (no container runtime there).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    VENV=/opt/venv PYTHON=python3.11 \
    WEB_HOST=0.0.0.0 WEB_PORT=8000 ADMIN_PORT=8001

WORKDIR /app
COPY . .
RUN bash scripts/install.sh /opt/venv \
    && useradd --system --home-dir /app svc \
    && mkdir -p var && chown -R svc var
USER svc

EXPOSE 8000 8001
# One process per container: web (the default: the API), admin (the back office), worker, webhooks, webhooks-test or beat. The release step is
# `python manage.py migrate --noinput`, run once per upgrade before new web containers start.
ENTRYPOINT ["/opt/venv/bin/python", "scripts/serve.py"]
CMD ["web"]
