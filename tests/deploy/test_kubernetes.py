"""deploy/kubernetes: every manifest passes the Kubernetes schema (kubernetes-validate, offline),
kustomize renders the base and each component, and what the manifests say about voxflow is
true: the probes' routes, the port, a grace period that covers the drain, the HPA's metric."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import SchemaNotFoundError

from tests.support.manifests import KUBERNETES, PORT, load, load_all
from voxflow.config import ServerSettings
from voxflow.server.app import create_app
from voxflow.server.metrics import ServerMetrics

# The oldest Kubernetes still commonly run; the manifests use nothing newer.
KUBERNETES_VERSION = "1.29"
COMPONENTS = sorted(p.parent for p in (KUBERNETES / "components").glob("*/kustomization.yaml"))
KUSTOMIZE_FILES = {"kustomization.yaml", "prometheus-adapter-rules.yaml"}


def _manifests() -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, doc)
        for path in sorted(KUBERNETES.rglob("*.yaml"))
        if path.name not in KUSTOMIZE_FILES
        for doc in load_all(path)
    ]


def _kind(kind: str, docs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    (found,) = [
        d
        for d in (docs or [d for _, d in _manifests()])
        if d["kind"] == kind and d["metadata"]["name"] == "voxflow"
    ]
    return found


def _validate(doc: dict[str, Any]) -> None:
    """The Kubernetes schema, strict (no unknown field); the prometheus-operator's
    ServiceMonitor has none there and is checked by its own test."""
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except SchemaNotFoundError:
        assert doc["kind"] == "ServiceMonitor", doc["kind"]


@pytest.mark.parametrize(
    ("path", "doc"), _manifests(), ids=lambda v: v.name if isinstance(v, Path) else v["kind"]
)
def test_each_manifest_passes_the_kubernetes_schema(path: Path, doc: dict[str, Any]) -> None:
    _validate(doc)


def test_the_schema_check_catches_a_mistake() -> None:
    deployment = _kind("Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    broken = {
        **deployment,
        "spec": {
            **deployment["spec"],
            "template": {
                "spec": {
                    "containers": [
                        {**container, "readinessProbe": {"httpGet": {"path": "/readyz"}}}
                    ]
                }
            },
        },
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def _kustomize(directory: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with its kustomize) is not installed: the render is not checked")
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.mark.parametrize(
    "components",
    [[], *[[c] for c in COMPONENTS], COMPONENTS],
    ids=lambda cs: "+".join(c.name for c in cs) or "base",
)
def test_kustomize_renders_valid_manifests(tmp_path: Path, components: list[Path]) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                # kustomize takes relative paths only.
                "resources": [os.path.relpath(KUBERNETES, overlay)],
                "components": [os.path.relpath(c, overlay) for c in components],
            }
        )
    )
    docs = _kustomize(overlay)
    for doc in docs:
        _validate(doc)
    kinds = {d["kind"] for d in docs}
    assert {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "ServiceMonitor",
    } <= kinds
    args = _kind("Deployment", docs)["spec"]["template"]["spec"]["containers"][0]["args"]
    metrics = _kind("HorizontalPodAutoscaler", docs)["spec"]["metrics"]
    names = {c.name for c in components}
    if "redis" in names:
        url = args[args.index("--cache-url") + 1]
        service = next(
            d
            for d in docs
            if d["kind"] == "Service"
            and d is not _kind("Service", docs)
            and d["metadata"]["name"] in url
        )
        assert (
            url == f"redis://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}/0"
        )
    else:
        assert "--cache-url" not in args
    expected = "Resource" if "cpu-autoscaling" in names else "Pods"
    assert [m["type"] for m in metrics] == [expected]


def _container() -> dict[str, Any]:
    container = _kind("Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert isinstance(container, dict)
    return container


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


def test_the_probes_ask_voxflow_routes_on_its_port() -> None:
    container = _container()
    routes = {getattr(r, "path", None) for r in create_app(ServerSettings()).routes}
    (port,) = container["ports"]
    assert port["containerPort"] == PORT == int(_env(container)["VOXFLOW_PORT"])
    probes = {
        name: container[name]["httpGet"]
        for name in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    # A full pod stays in the Service, to answer new calls with 429 and Retry-After.
    assert probes["readinessProbe"]["path"] == "/readyz?saturated=ok"
    assert probes["livenessProbe"]["path"] == "/healthz"
    for probe in probes.values():
        assert probe["path"].partition("?")[0] in routes
        assert probe["port"] == port["name"]
    service = _kind("Service")
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert service["spec"]["selector"].items() <= (
        _kind("Deployment")["spec"]["template"]["metadata"]["labels"].items()
    )


def test_the_grace_period_covers_the_pre_stop_and_the_drain() -> None:
    container = _container()
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    drain = float(_env(container)["VOXFLOW_DRAIN_S"])
    grace = _kind("Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # The last messages and the exit take about 2 s after the drain (docs/reliability.md).
    assert grace >= float(pre_stop[1]) + drain + 2 + 3
    # The workers are the cores the pod asks for (a CPU limit does not change what the
    # process sees), so the default cap of streams follows the request.
    assert int(_env(container)["VOXFLOW_WORKERS"]) == int(container["resources"]["requests"]["cpu"])


def _quantity(value: str) -> float:
    """A Kubernetes quantity as the HPA's targets write it: a number, or thousandths ("500m")."""
    return float(value[:-1]) / 1000 if value.endswith("m") else float(value)


def test_the_autoscaler_metric_is_each_pod_s_load_over_its_learnt_capacity() -> None:
    (metric,) = _kind("HorizontalPodAutoscaler")["spec"]["metrics"]
    name = metric["pods"]["metric"]["name"]
    (rule,) = load(KUBERNETES / "prometheus-adapter-rules.yaml")["rules"]["custom"]
    assert rule["name"]["as"] == name
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
    # The series it is found by is the load; the query divides it by the capacity, per pod.
    assert rule["seriesQuery"].startswith("voxflow_load{")
    assert rule["name"]["matches"] == "^voxflow_load$"
    load_part, capacity_part = rule["metricsQuery"].split(" / ")
    assert "<<.Series>>{<<.LabelMatchers>>}" in load_part and "by (<<.GroupBy>>)" in load_part
    assert "voxflow_capacity{<<.LabelMatchers>>}" in capacity_part
    assert "by (<<.GroupBy>>)" in capacity_part and capacity_part.endswith("> 0)")
    text = ServerMetrics().render().decode()
    for gauge in ("voxflow_load", "voxflow_capacity"):
        assert f"# TYPE {gauge} gauge" in text
    # A share: under 1 (a pod cannot take more than its capacity), and room left at the target.
    assert 0 < _quantity(metric["pods"]["target"]["averageValue"]) < 1


def test_the_service_monitor_scrapes_metrics_through_the_service() -> None:
    monitor = _kind("ServiceMonitor")
    service = _kind("Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    routes = {getattr(r, "path", None) for r in create_app(ServerSettings()).routes}
    assert endpoint["path"] == "/metrics" and endpoint["path"] in routes
    assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "bearerTokenSecret"}


def test_the_disruption_budget_and_autoscaler_target_the_deployment() -> None:
    deployment = _kind("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert _kind("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    hpa = _kind("HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert hpa["minReplicas"] >= 2  # the budget lets one go at a time
