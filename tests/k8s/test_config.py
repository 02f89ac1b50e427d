"""The configuration file: defaults, units, unknown keys and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from carbonshift.errors import InputError
from carbonshift.k8s.config import ControllerConfig, load_config, parse_config

REPO = Path(__file__).resolve().parents[2]


def test_defaults_are_usable() -> None:
    config = parse_config({})
    assert config.planning.slot_minutes == 60
    assert config.cluster.resources == ("cpu",)
    assert config.slot_seconds() == 3600.0


@pytest.mark.parametrize(
    ("raw", "want_in_message"),
    [
        ({"planing": {}}, "did you mean 'planning'"),
        ({"cluster": {"zoen": "DE"}}, "did you mean 'zone'"),
        ({"cluster": {"pue": 0.5}}, "cluster.pue = 0.5"),
        ({"cluster": {"resources": ["tpu"]}}, "'tpu' is not one the controller counts"),
        ({"planning": {"policy": "fluidoss"}}, "did you mean 'fluidos'"),
        ({"planning": {"policy": "caspian", "params": {"omega": 1}}}, "unknown parameter 'omega'"),
        ({"planning": {"forecast": "orcale"}}, "did you mean 'oracle'"),
        ({"cluster": {"watts_per_unit": {"memory": 1}}}, "not in cluster.resources"),
        ({"extender": {"carbon_wait_s": 60}}, "60.0 s is not between 0 and 30 s"),
    ],
    ids=[
        "section-typo",
        "field-typo",
        "pue-below-one",
        "unknown-resource",
        "policy-typo",
        "param-typo",
        "forecast-typo",
        "watts-for-unplanned-resource",
        "extender-wait-past-http-timeout",
    ],
)
def test_bad_configuration_is_refused_in_one_line(
    raw: dict[str, object], want_in_message: str
) -> None:
    with pytest.raises(InputError, match=None) as info:
        parse_config(raw)
    assert want_in_message in str(info.value)
    assert "\n" not in str(info.value)


def test_documented_example_loads(tmp_path: Path) -> None:
    config = load_config(REPO / "deploy" / "base" / "config.yaml")
    assert config.cluster.zone == "DE"
    toml = tmp_path / "c.toml"
    toml.write_text('[cluster]\nzone = "GB"\n[planning]\npolicy = "asap"\n')
    assert load_config(toml).cluster.zone == "GB"
    with pytest.raises(InputError, match=r"use \.yaml, \.yml or \.toml"):
        load_config(tmp_path / "c.json")


def _keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    out = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out += _keys(annotation, f"{prefix}{name}.")
        else:
            out.append(f"{prefix}{name}")
    return out


def test_every_configuration_key_is_documented() -> None:
    doc = (REPO / "docs" / "controller.md").read_text()
    missing = []
    for key in _keys(ControllerConfig):
        section, _, leaf = key.rpartition(".")
        spelled = (f"`{key}`", f"`{section}.{leaf}` ", f"/ `.{leaf}`", f"`.{leaf}`")
        if not any(s in doc for s in spelled) and f"`{section}.enabled` / `.{leaf}`" not in doc:
            missing.append(key)
    assert missing == []
