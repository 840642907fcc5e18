# The image docker-compose.yml builds: the product and its base requirements, static
# files collected. Every process of docs/DEPLOY.md runs from it with its own command.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production

WORKDIR /app
COPY requirements/ requirements/
RUN pip install -r requirements/base.txt
COPY . .
# The production settings stop without their secrets and connections; collectstatic
# connects to nothing, so placeholders do. The running containers get the real ones.
RUN DJANGO_SECRET_KEY=collectstatic \
    SECRETS_ENCRYPTION_KEY=LyYc3e9MyEYvJ-tQNrOPkDfRcgmXz6XMMig0uKvhWBw= \
    DATABASE_URL=postgres://collectstatic@localhost/none \
    CACHE_URL=redis://localhost:6379/0 \
    CELERY_BROKER_URL=redis://localhost:6379/1 \
    python manage.py collectstatic --noinput -v0

RUN useradd --system --no-create-home sendrealm
USER sendrealm
