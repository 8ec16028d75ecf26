"""Shapes of provider API keys, redacted from anything we write or show even when the key
itself was not known to us (defence in depth; known keys are replaced verbatim first)."""

from __future__ import annotations

import re

KEY_SHAPES = re.compile(
    r"\b(?:sk-ant-[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_*-]{8,}|AIza[0-9A-Za-z_-]{20,}|"
    r"xai-[A-Za-z0-9]{8,}|gsk_[A-Za-z0-9]{8,})")
