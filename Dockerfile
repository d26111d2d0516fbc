# The lvegit GitHub Action's image; its entry point is `lvegit action`. Two targets:
# - `slim`: lvegit and its runtime dependencies (requirements/action-slim.txt);
# - the default (last) one adds the PII checker's stack, Presidio with an NER-capable spaCy pipeline baked in
#   so that nothing is downloaded at run time (requirements/action.txt).
# The release workflow pushes both to GHCR; action.yml on release tags runs the default one by digest.
# GitHub runs container actions as root and mounts the workspace; lvegit tells git to trust it.
# The base is pinned by digest; Dependabot (.github/dependabot.yml) bumps it.
FROM python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d AS python

# lvegit's wheel, built with pinned build requirements and no build isolation: nothing unpinned is downloaded.
# Without git metadata in the build context, the release workflow passes the version it tagged.
FROM python AS wheel
WORKDIR /src
RUN --mount=type=bind,source=requirements/build.txt,target=/tmp/build.txt \
    pip install --no-cache-dir --no-deps -r /tmp/build.txt
COPY pyproject.toml README.md LICENSE ./
COPY lvegit lvegit
ARG LVEGIT_VERSION=0.0.0
RUN SETUPTOOLS_SCM_PRETEND_VERSION_FOR_LVEGIT="$LVEGIT_VERSION" \
    pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

FROM python AS slim
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# libseccomp2: the sandbox's seccomp filter (pyseccomp loads it). No version pins: Debian drops superseded
# versions from its archive, and the digest-pinned base
# already fixes the release (bookworm) whose security updates this takes.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
# Bind mounts, not COPY: nothing of the build (requirement files, the wheel, pip's cache) stays in the image.
RUN --mount=type=bind,source=requirements/action-slim.txt,target=/tmp/requirements.txt \
    pip install --no-cache-dir --no-deps -r /tmp/requirements.txt
RUN --mount=type=bind,from=wheel,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-deps /wheels/lvegit-*.whl
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["lvegit", "action"]

FROM slim AS full
RUN --mount=type=bind,source=requirements/action.txt,target=/tmp/requirements.txt \
    pip install --no-cache-dir --no-deps -r /tmp/requirements.txt
