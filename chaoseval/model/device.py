"""The device a scenario's page is seen on: the browser's viewport, pixel density and touch.

A scenario may name its device (``Scenario.viewport``; default ``desktop``) and the ``viewport``
perturbation moves a trial to another one. A name (``mobile``, ``tablet``, ``narrow``,
``desktop``, ``wide``), ``"WIDTHxHEIGHT"`` or the fields themselves are accepted everywhere.
The browser agents give their context exactly this (Playwright's ``viewport``,
``device_scale_factor``, ``is_mobile``, ``has_touch``); the text DOM knows only what follows
from the width: below a page's breakpoint its narrow layout applies (chaoseval.engine.domops).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Viewport(BaseModel):
    """A browser window in CSS pixels, with the device's pixel density and input."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default="custom", max_length=64)
    width: int = Field(ge=200, le=7680)
    height: int = Field(ge=200, le=4320)
    scale: float = Field(default=1.0, ge=0.5, le=4.0, description="device pixel ratio")
    mobile: bool = False  # a phone or tablet browser (meta viewport honoured, no scrollbars)
    touch: bool = False

    @model_validator(mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return named(value) if isinstance(value, str) else value

    def playwright(self) -> dict[str, Any]:
        """The keyword arguments of Playwright's ``browser.new_context`` for this device."""
        return {
            "viewport": {"width": self.width, "height": self.height},
            "device_scale_factor": self.scale,
            "is_mobile": self.mobile,
            "has_touch": self.touch,
        }


DEVICES: dict[str, dict[str, Any]] = {
    "mobile": {"width": 390, "height": 844, "scale": 3.0, "mobile": True, "touch": True},
    "tablet": {"width": 768, "height": 1024, "scale": 2.0, "mobile": True, "touch": True},
    "narrow": {"width": 600, "height": 900},  # a desktop window dragged narrow
    "desktop": {"width": 1280, "height": 800},
    "wide": {"width": 1920, "height": 1080},
}
SIZE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def named(value: str) -> dict[str, Any]:
    """The fields of a named device or of ``"WIDTHxHEIGHT"``."""
    if value in DEVICES:
        return {"name": value, **DEVICES[value]}
    size = SIZE.match(value)
    if size:
        return {"name": value.strip(), "width": int(size[1]), "height": int(size[2])}
    raise ValueError(
        f"unknown device {value!r}: name one of {', '.join(DEVICES)} or give WIDTHxHEIGHT "
        "(e.g. 412x915)"
    )


DESKTOP = Viewport.model_validate("desktop")
