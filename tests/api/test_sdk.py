"""The Carbon Aware SDK WebAPI drop-in: the SDK's documented examples, defaults and errors.

The examples are those of the SDK's WebAPI README and model docs (field names and request
parameters; our values differ since our data differ). Times are in 2022, inside the embedded
data, with the server's clock set to the SDK example's ``requestedAt`` where "now" matters.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from carbonshift.api import create_app
from carbonshift.api.regions import BUILT_IN, RegionTable, check_zone_id
from carbonshift.api.sdk import rolling_means
from carbonshift.carbon.providers import ChainSet, EmbeddedReplay, FallbackChain, ManualClock
from carbonshift.carbon.quality import OutlierAction
from carbonshift.carbon.series import CiKind
from carbonshift.carbon.zones import zone_catalogue
from carbonshift.errors import InputError
from tests.providers.loopback import LoopbackServer

#: the SDK README's forecast example was requested at this time
SDK_NOW = datetime(2022, 7, 19, 13, 37, 49, tzinfo=UTC)


def offline_app(now: datetime = SDK_NOW, regions: RegionTable | None = None) -> Any:
    chains = ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=EmbeddedReplay())},
        providers={},
    )
    return create_app(chains, clock=ManualClock(now), regions=regions)


@pytest.fixture(scope="module")
def sdk() -> Iterator[TestClient]:
    with TestClient(offline_app(), raise_server_exceptions=False) as client:
        yield client


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- the SDK's documented shapes ----------------------------------------------------------------

#: EmissionsData of bylocation(s)(/best): GSF.CarbonAware.Models.EmissionsData
EMISSIONS_DATA = {"location": str, "time": str, "rating": float, "duration": str}
#: EmissionsDataDTO: forecast points
FORECAST_POINT = {"location": str, "timestamp": str, "duration": int, "value": float}
#: EmissionsForecastDTO
FORECAST = {
    "generatedAt": str,
    "requestedAt": str,
    "location": str,
    "dataStartAt": str,
    "dataEndAt": str,
    "windowSize": int,
    "optimalDataPoints": list,
    "forecastData": list,
}
#: CarbonIntensityDTO
CARBON_INTENSITY = {"location": str, "startTime": str, "endTime": str, "carbonIntensity": float}
#: Location of /locations
LOCATION = {"latitude": float, "longitude": float, "name": str}


def assert_shape(item: dict[str, Any], shape: dict[str, type]) -> None:
    for field, want_type in shape.items():
        assert field in item, f"{field} missing from {sorted(item)}"
        value = item[field]
        if want_type is float:
            assert isinstance(value, int | float), (field, value)
            assert not isinstance(value, bool), (field, value)
        else:
            assert isinstance(value, want_type), (field, value)
        if want_type is str and field in {"time", "timestamp", "startTime", "endTime"}:
            assert parse(value).tzinfo is not None


@pytest.mark.parametrize(
    ("method", "path", "request_", "want_shape", "want_status"),
    [
        pytest.param(
            "GET",
            "/emissions/bylocation",
            {"location": "eastus", "time": "2022-05-10T00:00:00Z", "toTime": "2022-05-17T00:00Z"},
            EMISSIONS_DATA,
            200,
            id="readme-bylocation-a-week",
        ),
        pytest.param(
            "GET",
            "/emissions/bylocations",
            [
                ("location", "eastus"),
                ("location", "westus"),
                ("time", "2022-05-16T00:00:00Z"),
                ("toTime", "2022-05-17T00:00:00Z"),
            ],
            EMISSIONS_DATA,
            200,
            id="readme-bylocations-eastus-westus",
        ),
        pytest.param(
            "GET",
            "/emissions/bylocations/best",
            [
                ("location", "eastus"),
                ("location", "westus"),
                ("time", "2022-05-16T00:00:00Z"),
                ("toTime", "2022-05-17T00:00:00Z"),
            ],
            EMISSIONS_DATA,
            200,
            id="readme-best",
        ),
        pytest.param(
            "GET",
            "/emissions/average-carbon-intensity",
            {
                "location": "eastus",
                "startTime": "2022-03-01T15:30:00Z",
                "endTime": "2022-03-01T18:30:00Z",
            },
            CARBON_INTENSITY,
            200,
            id="dto-average",
        ),
        pytest.param(
            "POST",
            "/emissions/average-carbon-intensity/batch",
            [
                {
                    "location": "eastus",
                    "startTime": "2022-03-01T15:30:00Z",
                    "endTime": "2022-03-01T18:30:00Z",
                },
                {
                    "location": "eastus",
                    "startTime": "2022-03-02T15:30:00Z",
                    "endTime": "2022-03-02T18:30:00Z",
                },
            ],
            CARBON_INTENSITY,
            200,
            id="dto-average-batch",
        ),
        pytest.param(
            "GET",
            "/emissions/forecasts/current",
            {
                # the README asks northeurope (Ireland: no embedded data); eastus is embedded
                "location": "eastus",
                "dataStartAt": "2022-07-19T14:00:00Z",
                "dataEndAt": "2022-07-20T04:38:00Z",
                "windowSize": 10,
            },
            FORECAST,
            200,
            id="readme-forecast-current",
        ),
        pytest.param(
            "POST",
            "/emissions/forecasts/batch",
            [
                {
                    "location": "eastus",
                    "dataStartAt": "2022-06-01T14:00:00Z",
                    "dataEndAt": "2022-06-01T18:00:00Z",
                    "windowSize": 30,
                    "requestedAt": "2022-06-01T12:01:00Z",
                },
                {
                    "location": "westus",
                    "dataStartAt": "2022-06-13T08:00:00Z",
                    "dataEndAt": "2022-06-13T10:00:00Z",
                    "windowSize": 30,
                    "requestedAt": "2022-06-13T06:05:00Z",
                },
            ],
            FORECAST,
            200,
            id="readme-forecast-batch",
        ),
    ],
)
def test_the_sdk_examples_get_the_sdk_shapes(
    sdk: TestClient,
    method: str,
    path: str,
    request_: Any,
    want_shape: dict[str, type],
    want_status: int,
) -> None:
    get = method == "GET"
    response = sdk.get(path, params=request_) if get else sdk.post(path, json=request_)
    assert response.status_code == want_status, response.text
    body = response.json()
    assert _keys_with_underscores(body) == set()  # one casing per family: the SDK's camelCase
    items = body if isinstance(body, list) else [body]
    assert items
    for item in items:
        assert_shape(item, want_shape)
        assert item["location"] in {"eastus", "westus"}
        if want_shape is FORECAST:
            assert item["forecastData"]
            for point in item["forecastData"] + item["optimalDataPoints"]:
                assert_shape(point, FORECAST_POINT)
                assert point["duration"] == item["windowSize"]
    if path.endswith("/batch"):
        assert [i["location"] for i in items] == [r["location"] for r in request_]


def _keys_with_underscores(body: Any) -> set[str]:
    """Every object key anywhere in ``body`` that is not camelCase (holds ``_``)."""
    if isinstance(body, list):
        return set().union(*(_keys_with_underscores(item) for item in body))
    if isinstance(body, dict):
        own = {key for key in body if "_" in key}
        return own.union(*(_keys_with_underscores(value) for value in body.values()))
    return set()


def test_locations_lists_the_regions_like_the_sdk_location_source(sdk: TestClient) -> None:
    response = sdk.get("/locations")
    assert response.status_code == 200
    body = response.json()
    assert_shape(body["eastus"], LOCATION)
    assert body["eastus"]["name"] == "eastus"
    assert body["eastus"]["zone"] == "US-MIDA-PJM"
    assert body["us-east-1"]["provider"] == "aws"
    assert set(body) == {r.name for r in BUILT_IN}


# -- the SDK's defaults -------------------------------------------------------------------------


def test_emissions_without_to_time_are_one_point_in_time(sdk: TestClient) -> None:
    response = sdk.get(
        "/emissions/bylocation", params={"location": "uksouth", "time": "2022-05-16T10:20:00Z"}
    )
    assert response.status_code == 200, response.text
    (point,) = response.json()
    assert parse(point["time"]) == datetime(2022, 5, 16, 10, tzinfo=UTC)
    assert point["duration"] == "01:00:00"
    assert point["zone"] == "GB"


def test_emissions_without_any_time_are_the_point_holding_now(sdk: TestClient) -> None:
    (point,) = sdk.get("/emissions/bylocation", params={"location": "eastus"}).json()
    assert parse(point["time"]) == SDK_NOW.replace(minute=0, second=0)


def test_emissions_are_past_data_so_the_future_has_none(sdk: TestClient) -> None:
    future = sdk.get(
        "/emissions/bylocations",
        params={
            "location": "eastus",
            "time": "2022-07-20T00:00:00Z",
            "toTime": "2022-07-21T00:00:00Z",
        },
    )
    assert future.status_code == 204
    reaching = sdk.get(
        "/emissions/bylocations/best",
        params={"location": "eastus", "time": "2022-07-19T00:00Z", "toTime": "2022-07-21T00:00Z"},
    )
    assert reaching.status_code == 200
    assert max(parse(p["time"]) for p in reaching.json()) <= SDK_NOW


def test_best_is_the_lowest_point_over_every_location(sdk: TestClient) -> None:
    params = [
        ("location", "eastus"),
        ("location", "uksouth"),
        ("time", "2022-05-16T00:00:00Z"),
        ("toTime", "2022-05-17T00:00:00Z"),
    ]
    every = sdk.get("/emissions/bylocations", params=params).json()
    best = sdk.get("/emissions/bylocations/best", params=params).json()
    want_rating = min(p["rating"] for p in every)
    assert best == [p for p in every if p["rating"] == want_rating]
    assert len(every) == 48


def test_average_is_time_weighted_over_the_range(sdk: TestClient) -> None:
    hours = sdk.get(
        "/emissions/bylocation",
        params={"location": "westus", "time": "2022-03-01T00:00Z", "toTime": "2022-03-01T02:00Z"},
    ).json()
    want = (0.5 * hours[0]["rating"] + hours[1]["rating"]) / 1.5
    response = sdk.get(
        "/emissions/average-carbon-intensity",
        params={
            "location": "westus",
            "startTime": "2022-03-01T00:30:00Z",
            "endTime": "2022-03-01T02:00:00Z",
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["carbonIntensity"] == pytest.approx(want)


def test_forecast_without_window_size_is_one_data_point_long(sdk: TestClient) -> None:
    (forecast,) = sdk.get("/emissions/forecasts/current", params={"location": "eastus"}).json()
    assert forecast["windowSize"] == 60
    assert len(forecast["forecastData"]) == 24
    first = SDK_NOW.replace(minute=0, second=0)
    assert parse(forecast["dataStartAt"]) == first
    assert parse(forecast["dataEndAt"]) == first + timedelta(hours=24)
    lowest = min(p["value"] for p in forecast["forecastData"])
    assert forecast["optimalDataPoints"] == [
        p for p in forecast["forecastData"] if p["value"] == lowest
    ]


def test_forecast_data_is_the_rolling_average_from_data_start(sdk: TestClient) -> None:
    start, end = "2022-07-19T14:00:00Z", "2022-07-19T20:00:00Z"
    (hourly,) = sdk.get(
        "/emissions/forecasts/current",
        params={"location": "eastus", "dataStartAt": start, "dataEndAt": end},
    ).json()
    values = [p["value"] for p in hourly["forecastData"]]
    (rolling,) = sdk.get(
        "/emissions/forecasts/current",
        params={"location": "eastus", "dataStartAt": start, "dataEndAt": end, "windowSize": 120},
    ).json()
    want = [(values[i] + values[i + 1]) / 2 for i in range(len(values) - 1)]
    assert [p["value"] for p in rolling["forecastData"]] == pytest.approx(want)
    assert [parse(p["timestamp"]).hour for p in rolling["forecastData"]] == list(range(14, 19))


def test_a_window_longer_than_the_data_gives_empty_lists_as_the_sdk(sdk: TestClient) -> None:
    (forecast,) = sdk.get(
        "/emissions/forecasts/current",
        params={
            "location": "eastus",
            "dataStartAt": "2022-07-19T14:00:00Z",
            "dataEndAt": "2022-07-19T16:00:00Z",
            "windowSize": 180,
        },
    ).json()
    assert (forecast["forecastData"], forecast["optimalDataPoints"]) == ([], [])


def test_rolling_means_match_a_brute_force_average() -> None:
    start = datetime(2022, 1, 1, tzinfo=UTC)
    values = [10.0, 20.0, 40.0, 80.0]
    starts = [start + timedelta(minutes=m) for m in (0, 15, 30, 60)]
    got = rolling_means(start, 30, values, starts, 45)
    minute_values = [v for v in values for _ in range(30)]
    want = [sum(minute_values[m : m + 45]) / 45 for m in (0, 15, 30, 60)]
    assert got == pytest.approx(want)


# -- the SDK's errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "request_", "want_title", "want_field", "want_message"),
    [
        pytest.param(
            "GET",
            "/emissions/bylocations",
            {},
            "One or more validation errors occurred.",
            "location",
            "The location field is required.",
            id="no-location",
        ),
        pytest.param(
            "GET",
            "/emissions/bylocations",
            {"location": "eastus", "toTime": "2022-05-17T00:00:00Z"},
            "ArgumentException",
            "time",
            "time must be defined if toTime is defined",
            id="to-time-without-time",
        ),
        pytest.param(
            "GET",
            "/emissions/bylocation",
            {"location": "eastus", "time": "2022-05-17T00:00Z", "toTime": "2022-05-16T00:00Z"},
            "ArgumentException",
            "time",
            "time must be before toTime",
            id="time-after-to-time",
        ),
        pytest.param(
            "GET",
            "/emissions/average-carbon-intensity",
            {"location": "eastus", "startTime": "2022-03-01T15:30:00Z"},
            "ArgumentException",
            "endTime",
            "endTime is not set",
            id="average-without-end",
        ),
        pytest.param(
            "GET",
            "/emissions/bylocation",
            {"location": "atlantis-west"},
            "ArgumentException",
            "location",
            "Unknown Location: 'atlantis-west' not found",
            id="unknown-region",
        ),
        pytest.param(
            "GET",
            "/emissions/bylocation",
            {"location": "../../etc/passwd"},
            "ArgumentException",
            "location",
            "Unknown Location",
            id="a-path-is-no-location",
        ),
        pytest.param(
            "POST",
            "/emissions/forecasts/batch",
            [{"location": "eastus"}],
            "ArgumentException",
            "requestedAt",
            "requestedAt is not set",
            id="batch-without-requested-at",
        ),
        pytest.param(
            "GET",
            "/emissions/forecasts/current",
            {"location": "eastus", "dataStartAt": "2022-07-25T00:00:00Z"},
            "ArgumentException",
            "dataStartAt",
            "is outside the forecast data",
            id="start-after-the-forecast",
        ),
    ],
)
def test_bad_input_answers_the_sdk_validation_problem(
    sdk: TestClient,
    method: str,
    path: str,
    request_: Any,
    want_title: str,
    want_field: str,
    want_message: str,
) -> None:
    get = method == "GET"
    response = sdk.get(path, params=request_) if get else sdk.post(path, json=request_)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "https://tools.ietf.org/html/rfc7231#section-6.5.1"
    assert (body["title"], body["status"]) == (want_title, 400)
    assert want_message in " ".join(body["errors"][want_field])


def test_an_unknown_region_is_told_the_known_names(sdk: TestClient) -> None:
    body = sdk.get("/emissions/bylocation", params={"location": "mars-1"}).json()
    assert "eastus" in body["detail"]
    assert "us-east-1" in body["detail"]
    assert "--region-map" in body["detail"]


# -- the region table ---------------------------------------------------------------------------


def test_every_embedded_zone_with_a_cloud_region_is_mapped() -> None:
    mapped = {r.zone for r in BUILT_IN}
    embedded = {z.id for z in zone_catalogue()}
    # no Azure or AWS region lies in New York ISO
    assert embedded - mapped == {"US-NY-NYIS"}


def test_region_rows_are_well_formed() -> None:
    names = [r.name for r in BUILT_IN]
    assert len(names) == len(set(names))
    for region in BUILT_IN:
        assert region.name == region.name.lower()
        assert check_zone_id(region.zone) == region.zone
        assert region.provider in {"azure", "aws"}
        assert region.latitude is not None
        assert region.longitude is not None
        assert -90 <= region.latitude <= 90
        assert -180 <= region.longitude <= 180


@pytest.mark.parametrize(
    ("text", "suffix", "want"),
    [
        pytest.param("my-dc: DE\neastus: US-CAL-CISO\n", ".yaml", "US-CAL-CISO", id="yaml"),
        pytest.param('{"my-dc": "DE", "eastus": "US-CAL-CISO"}', ".json", "US-CAL-CISO", id="json"),
    ],
)
def test_custom_region_maps_add_and_override(
    tmp_path: Path, text: str, suffix: str, want: str
) -> None:
    path = tmp_path / f"regions{suffix}"
    path.write_text(text)
    table = RegionTable().with_file(path)
    app = offline_app(regions=table)
    with TestClient(app) as client:
        mine = client.get("/emissions/bylocation", params={"location": "My-DC"}).json()
        east = client.get("/emissions/bylocation", params={"location": "eastus"}).json()
    assert (mine[0]["location"], mine[0]["zone"]) == ("My-DC", "DE")
    assert east[0]["zone"] == want


@pytest.mark.parametrize(
    ("text", "want_detail"),
    [
        pytest.param("eastus: ../../etc\n", "is not a zone id", id="path-as-zone"),
        pytest.param("eastus: [DE]\n", "give a zone id string", id="list-as-zone"),
        pytest.param("- eastus\n", "holds no mapping", id="a-list"),
        pytest.param("'a b': DE\n", "is not a region name", id="space-in-name"),
    ],
)
def test_bad_region_maps_are_refused(tmp_path: Path, text: str, want_detail: str) -> None:
    path = tmp_path / "regions.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(want_detail)):
        RegionTable().with_file(path)


def test_serve_reads_the_region_map_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from carbonshift.cli.app import main

    path = tmp_path / "regions.yaml"
    path.write_text("eastus: ../x\n")
    assert main(["serve", "--offline", "--region-map", str(path)]) != 0
    assert "is not a zone id" in capsys.readouterr().err


# -- offline API docs ---------------------------------------------------------------------------


def local_assets(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)=["']([^"']+)["']|url: *['"]([^'"]+)['"]""", html)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_use_only_local_assets_that_are_served(sdk: TestClient, page: str) -> None:
    html = sdk.get(page).text
    urls = [a or b for a, b in local_assets(html)]
    assert urls
    assert "cdn" not in html.lower()
    assert "fonts.googleapis" not in html
    for url in urls:
        assert url.startswith("/"), url
        response = sdk.get(url)
        assert response.status_code == 200, url
        assert len(response.content) > 0
    assert any(url.endswith(".js") for url in urls)


def test_the_vendored_assets_keep_their_licences() -> None:
    static = Path(__file__).parents[2] / "src" / "carbonshift" / "api" / "static"
    assert "Apache License" in (static / "swagger-ui" / "LICENSE").read_text()
    assert "MIT" in (static / "redoc" / "LICENSE").read_text()
    total = sum(p.stat().st_size for p in static.rglob("*") if p.is_file())
    assert total < 4_000_000


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")
@pytest.mark.parametrize(
    ("page", "want_text"),
    [
        pytest.param("/docs", "/emissions/forecasts/batch", id="swagger-ui"),
        pytest.param("/redoc", "average-carbon-intensity", id="redoc"),
    ],
)
def test_docs_render_in_headless_chromium(page: str, want_text: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    with LoopbackServer(offline_app()) as server:
        result = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                f"--user-data-dir={tmp_path}",
                "--virtual-time-budget=15000",
                "--dump-dom",
                server.url + page,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    dom = result.stdout
    assert want_text in dom, (result.returncode, result.stderr[-2000:])
    # rendered, not just the empty shell the server sent
    assert len(dom) > 20_000


# -- an SDK client -------------------------------------------------------------------------------


def test_carbonshifts_own_sdk_client_reads_this_server_by_azure_region(tmp_path: Path) -> None:
    # carbonshift's carbon-aware-sdk source is a client written against the SDK's WebAPI: it
    # asks bylocations for the past and forecasts/current for the rest, by region name
    from carbonshift.carbon.embedded import load_series
    from carbonshift.carbon.providers import CarbonAwareSdkProvider, DiskCache
    from carbonshift.carbon.providers.zones import ZoneTable

    start = datetime(2022, 7, 19, 8, tzinfo=UTC)
    with LoopbackServer(offline_app()) as server:
        client = CarbonAwareSdkProvider(
            server.url,
            kind=CiKind.DIRECT,
            zones=ZoneTable(carbon_aware_sdk={"US-MIDA-PJM": "eastus"}),
            clock=ManualClock(SDK_NOW),
            cache=DiskCache(tmp_path),
        )
        try:
            series = client.fetch("US-MIDA-PJM", start, start + timedelta(hours=10), CiKind.DIRECT)
        finally:
            client.close()
    truth = load_series("US-MIDA-PJM")

    def at(of: Any, moment: datetime) -> float:
        index = int((moment - of.start).total_seconds() // 60) // of.step_minutes
        return float(of.values_g_per_kwh[index])

    past = [start + timedelta(hours=h) for h in range(5)]  # 08:00 to 12:00, before "now"
    assert [at(series, t) for t in past] == pytest.approx([at(truth, t) for t in past])
    assert series.end >= start + timedelta(hours=10)


class GappySignal:
    """Hourly values 100, 200, ... with one hour missing (NaN) at 16:00."""

    def window(
        self,
        zone: str,
        start: datetime,
        end: datetime,
        *,
        slot_minutes: int = 60,
        kind: CiKind = CiKind.DIRECT,
    ) -> Any:
        import numpy as np

        from carbonshift.carbon.series import SignalWindow

        n = int((end - start).total_seconds() // 60) // slot_minutes
        values = np.array([100.0 * (i + 1) for i in range(n)])
        gap = int((datetime(2022, 7, 19, 16, tzinfo=UTC) - start).total_seconds() // 3600)
        if 0 <= gap < n:
            values[gap] = np.nan
        return SignalWindow(zone, kind, start, end, slot_minutes, values, source="gappy")


def test_windows_over_a_gap_in_the_data_are_left_out() -> None:
    chains = ChainSet(
        chains={CiKind.DIRECT: FallbackChain(CiKind.DIRECT, [], floor=GappySignal())},
        providers={},
    )
    app = create_app(chains, clock=ManualClock(SDK_NOW))
    with TestClient(app) as client:
        response = client.get(
            "/emissions/forecasts/current",
            params={
                "location": "eastus",
                "dataStartAt": "2022-07-19T14:00:00Z",
                "dataEndAt": "2022-07-19T19:00:00Z",
                "windowSize": 120,
            },
        )
        clear_of_gap = client.get(
            "/emissions/average-carbon-intensity",
            params={
                "location": "eastus",
                "startTime": "2022-07-19T11:00Z",
                "endTime": "2022-07-19T13:00Z",
            },
        )
        over_gap = client.get(
            "/emissions/average-carbon-intensity",
            params={
                "location": "eastus",
                "startTime": "2022-07-19T15:30Z",
                "endTime": "2022-07-19T16:30Z",
            },
        )
    assert clear_of_gap.status_code == 200, clear_of_gap.text
    assert clear_of_gap.json()["carbonIntensity"] == pytest.approx(150.0)  # 100 and 200
    assert over_gap.status_code == 400
    assert "have gaps" in over_gap.json()["detail"]
    assert response.status_code == 200, response.text
    (forecast,) = response.json()
    hours = [parse(p["timestamp"]).hour for p in forecast["forecastData"]]
    assert hours == [14, 17]  # 15:00 and 16:00 windows hold the missing hour
    assert [p["value"] for p in forecast["optimalDataPoints"]] == [150.0]


def _glitch_app(outliers: str) -> Any:
    """The embedded data, screened as ``CARBONSHIFT_OUTLIERS=<outliers>`` says, a day after the
    known GB glitch (2023-06-07 10:00-11:00, 9 g/kWh between 149 and 77)."""
    chain = FallbackChain(
        CiKind.DIRECT, [], floor=EmbeddedReplay(), outliers=OutlierAction(outliers)
    )
    chains = ChainSet(chains={CiKind.DIRECT: chain}, providers={})
    return create_app(chains, clock=ManualClock(datetime(2023, 6, 8, tzinfo=UTC)))


GLITCH_RANGE = {"location": "GB", "time": "2023-06-07T00:00Z", "toTime": "2023-06-07T23:00Z"}


@pytest.mark.parametrize(
    ("outliers", "want_suspect_hours"),
    [
        pytest.param("flag", [10, 11], id="flag-lists-the-two-points-with-the-values-given"),
        pytest.param("interpolate", [10, 11], id="interpolate-lists-them-too"),
        pytest.param("keep", [], id="keep-screens-nothing"),
    ],
)
def test_answers_name_their_suspect_points(outliers: str, want_suspect_hours: list[int]) -> None:
    with TestClient(_glitch_app(outliers), raise_server_exceptions=False) as client:
        points = client.get("/emissions/bylocations", params=GLITCH_RANGE).json()
        average = client.get(
            "/emissions/average-carbon-intensity",
            params={
                "location": "GB",
                "startTime": GLITCH_RANGE["time"],
                "endTime": GLITCH_RANGE["toTime"],
            },
        ).json()
    assert {p["outliers"] for p in points} == {outliers}
    flagged = {parse(p["time"]).hour: p for p in points if p["suspect"]}
    assert sorted(flagged) == want_suspect_hours
    for hour, point in flagged.items():
        (own,) = point["suspect"]  # a data point lists only itself
        assert parse(own["timestamp"]).hour == hour
        assert own["value"] < 30  # the value as the source gave it
        if outliers == "flag":
            assert point["rating"] == own["value"]
        else:  # replaced from the neighbours (149 before, 77 after)
            assert 70 < point["rating"] < 160
    assert average["outliers"] == outliers
    assert sorted(parse(p["timestamp"]).hour for p in average["suspect"]) == want_suspect_hours
