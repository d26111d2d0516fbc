# The lvegit GitHub Action: a small Python image with pinned dependencies; the entry point is `lvegit action`.
# (GitHub runs container actions as root and mounts the workspace; lvegit tells git to trust it.)
FROM python:3.11.11-slim-bookworm

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

RUN apt-get update \
    && apt-get install -y --no-install-recommends git=1:2.39.5-0+deb12u3 \
    && rm -rf /var/lib/apt/lists/*

COPY requirements/action.txt /tmp/requirements.txt
RUN pip install --no-cache-dir --no-deps -r /tmp/requirements.txt

COPY pyproject.toml README.md /opt/lvegit/
COPY lvegit /opt/lvegit/lvegit
RUN pip install --no-cache-dir --no-deps /opt/lvegit

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["lvegit", "action"]
