"""Checkers that judge with a model (Presidio, transformers classifiers).

Their names and arguments are registered so that LVEs using them validate. Judging needs models that this
version cannot load offline, so building one raises CheckerUnavailable, which replay reports as `skipped`.
"""

from __future__ import annotations

from typing import Any

from lvegit.checkers.base import BaseChecker
from lvegit.errors import CheckerUnavailable

DEFAULT_TOXICITY_MODEL = "s-nlp/roberta_toxicity_classifier"
DEFAULT_BIAS_MODEL = "valurank/distilroberta-bias"


class _ModelChecker(BaseChecker):
    needs = "a model"

    def _unavailable(self) -> CheckerUnavailable:
        return CheckerUnavailable(
            f"{type(self).__name__} needs {self.needs}, which this lvegit version cannot load"
        )

    def is_safe(self, prompt: Any, response: Any, param_values: dict[str, Any] | None = None) -> bool:
        raise self._unavailable()


class PII_Checker(_ModelChecker):  # the class name LVE repositories use
    """Unsafe when Presidio finds one of `entities` (e.g. ["LOCATION", "EMAIL_ADDRESS"]) in the response."""

    needs = "Presidio with an NER model"

    def __init__(self, entities: list[str]) -> None:
        super().__init__()
        if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
            raise ValueError("entities must be a list of Presidio entity names")
        raise self._unavailable()


class ToxicityChecker(_ModelChecker):
    """Unsafe when a text classifier labels the response toxic with a score above `toxicity_threshold`."""

    needs = "a transformers toxicity classifier"

    def __init__(self, toxicity_threshold: float, model: str = DEFAULT_TOXICITY_MODEL) -> None:
        super().__init__()
        raise self._unavailable()


class BiasChecker(_ModelChecker):
    """Unsafe when a text classifier labels the response biased with a score above `bias_threshold`."""

    needs = "a transformers bias classifier"

    def __init__(self, bias_threshold: float, model: str = DEFAULT_BIAS_MODEL) -> None:
        super().__init__()
        raise self._unavailable()
