"""The fake server driven by kubernetes-asyncio, the client the controller uses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from fakekube import FakeKube
from tests.testing.builders import job, pod


async def api_client(fakekube: FakeKube) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(fakekube.kubeconfig), client_configuration=configuration
    )
    return client.ApiClient(configuration)


async def test_typed_clients_create_patch_and_see_conflicts(fakekube: FakeKube) -> None:
    async with await api_client(fakekube) as api:
        core = client.CoreV1Api(api)
        created = await core.create_namespaced_pod(
            "default", pod("p", gates=("carbonshift.io/hold",))
        )
        assert created.spec.scheduling_gates[0].name == "carbonshift.io/hold"

        with pytest.raises(ApiException) as refused:
            await core.patch_namespaced_pod(
                "p",
                "default",
                [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "x"}}],
            )
        assert refused.value.status == 422

        stale = created
        stale.metadata.labels = {"a": "b"}
        await core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"c": "d"}}})
        with pytest.raises(ApiException) as conflict:
            await core.replace_namespaced_pod("p", "default", stale)
        assert conflict.value.status == 409

        released = await core.patch_namespaced_pod(
            "p", "default", {"spec": {"schedulingGates": None}}
        )
        assert released.spec.scheduling_gates is None


async def test_watch_stream_sees_a_job_run(fakekube: FakeKube) -> None:
    async with await api_client(fakekube) as api:
        batch = client.BatchV1Api(api)
        await batch.create_namespaced_job("default", job("j", runtime="30m"))
        listed = await batch.list_namespaced_job("default")
        seen: list[Any] = []

        async def follow() -> None:
            stream = watch.Watch()
            async for event in stream.stream(
                batch.list_namespaced_job,
                "default",
                resource_version=listed.metadata.resource_version,
                timeout_seconds=5,
            ):
                seen.append(event["object"])
                if any(c.type == "Complete" for c in event["object"].status.conditions or []):
                    stream.stop()

        task = asyncio.create_task(follow())
        await fakekube.advance_async(minutes=30)
        await asyncio.wait_for(task, 10)

        assert seen[-1].status.succeeded == 1


async def test_leases_round_trip(fakekube: FakeKube) -> None:
    async with await api_client(fakekube) as api:
        leases = client.CoordinationV1Api(api)
        body = {
            "metadata": {"name": "carbonshift-controller"},
            "spec": {
                "holderIdentity": "a",
                "leaseDurationSeconds": 15,
                # Not a whole second: the client turns renewTime into a datetime and writes it
                # back with isoformat(), which drops a zero fraction ("...00+00:00"), and a real
                # server refuses that MicroTime (see test_whole_second_times_round_trip_badly).
                "renewTime": "2023-06-01T00:00:00.250000Z",
            },
        }
        created = await leases.create_namespaced_lease("default", body)
        created.spec.holder_identity = "b"
        updated = await leases.replace_namespaced_lease(
            "carbonshift-controller", "default", created
        )

        assert updated.spec.holder_identity == "b"
        assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)


async def test_whole_second_times_round_trip_badly(fakekube: FakeKube) -> None:
    """kubernetes-asyncio writes a read-back MicroTime with a zero fraction as
    ``2023-06-01T00:00:00+00:00``, which a real API server cannot decode (400): the fake says
    so too, so code that round-trips typed Leases is caught here."""
    async with await api_client(fakekube) as api:
        leases = client.CoordinationV1Api(api)
        body = {
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "renewTime": "2023-06-01T00:00:00.000000Z"},
        }
        created = await leases.create_namespaced_lease("default", body)

        with pytest.raises(ApiException) as refused:
            await leases.replace_namespaced_lease("l", "default", created)

    assert refused.value.status == 400
    assert 'cannot parse "+00:00" as ".000000"' in json.loads(refused.value.body)["message"]
