"""The CLI shell: carbonshift errors become one line and exit 2, --debug shows the traceback."""

from __future__ import annotations

import pytest
import typer

from carbonshift.cli import app as cli_app
from carbonshift.errors import InputError, TemporaryError


@pytest.fixture
def failing_verb(monkeypatch: pytest.MonkeyPatch) -> None:
    sub = typer.Typer()

    @sub.command()
    def boom(kind: str = "input") -> None:
        if kind == "input":
            raise InputError("zone 'XX' is unknown; use one of DE, GB")
        raise TemporaryError("provider down; retry later", delay_s=5)

    monkeypatch.setattr(cli_app, "app", typer.Typer())
    cli_app.app.callback()(cli_app._root)
    cli_app.app.add_typer(sub, name="test")


@pytest.mark.usefixtures("failing_verb")
@pytest.mark.parametrize(
    ("args", "want_code"),
    [
        pytest.param(["test", "boom"], 2, id="input-error-exit-2"),
        pytest.param(["test", "boom", "--kind", "temp"], 1, id="temporary-error-exit-1"),
    ],
)
def test_errors_are_one_line(
    args: list[str], want_code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_app.main(args) == want_code
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.usefixtures("failing_verb")
def test_debug_raises() -> None:
    with pytest.raises(InputError):
        cli_app.main(["--debug", "test", "boom"])
