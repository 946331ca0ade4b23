"""The official Python Kubernetes client (python-kubernetes) against the local API server.

Driven by test/integration/kube/python-client.test.ts:

    python kube_peer.py <scenario> --kubeconfig FILE --namespace NS [--names a,b,...]

Each scenario prints JSON lines on stdout and ends with one {"result": ...} line; the jest test
asserts on them. Failures print {"error": ...} and exit 1, so the test shows what the client saw.
"""

import argparse
import json
import sys
import threading
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

GROUP = "projectcontour.io"
VERSION = "v1"
PLURAL = "httpproxies"


def emit(**fields):
    print(json.dumps(fields), flush=True)


def httpproxy(name, fqdn, labels=None):
    metadata = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HTTPProxy",
        "metadata": metadata,
        "spec": {"virtualhost": {"fqdn": fqdn}},
    }


def summary(event):
    raw = event["raw_object"]
    metadata = raw.get("metadata", {})
    return {
        "type": event["type"],
        "name": metadata.get("name"),
        "resourceVersion": metadata.get("resourceVersion"),
        "generation": metadata.get("generation"),
        "fqdn": raw.get("spec", {}).get("virtualhost", {}).get("fqdn"),
        "annotations": metadata.get("annotations"),
    }


def scenario_list(api_client, args):
    """Pages through HTTPProxies with limit/continue, then lists Namespaces through the typed API."""
    custom = client.CustomObjectsApi(api_client)
    pages = []
    token = None
    while True:
        kwargs = {"limit": 2}
        if token:
            kwargs["_continue"] = token
        page = custom.list_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL, **kwargs)
        metadata = page.get("metadata", {})
        pages.append({
            "names": [item["metadata"]["name"] for item in page["items"]],
            "continue": bool(metadata.get("continue")),
            "remainingItemCount": metadata.get("remainingItemCount"),
            "resourceVersion": metadata.get("resourceVersion"),
        })
        token = metadata.get("continue")
        if not token:
            break
    selected = custom.list_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL, label_selector="tier=edge", pretty="true")
    core = client.CoreV1Api(api_client)
    namespaces = core.list_namespace(limit=1)
    emit(result={
        "pages": pages,
        "selected": [item["metadata"]["name"] for item in selected["items"]],
        # The typed client deserialises V1NamespaceList, whose metadata carries `_continue`.
        "typedNamespacePage": {
            "names": [ns.metadata.name for ns in namespaces.items],
            "continue": bool(namespaces.metadata._continue),
            "kind": type(namespaces).__name__,
        },
    })


def write_sequence(api_client, namespace, name):
    """Creates, changes and deletes one HTTPProxy (from another thread, while the watch runs)."""
    custom = client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, httpproxy(name, f"{name}.local"))
    custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, {"spec": {"virtualhost": {"fqdn": f"{name}-2.local"}}})
    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def scenario_watch(api_client, args):
    """watch.Watch().stream(): the existing object first, then a create/patch/delete made while it runs."""
    custom = client.CustomObjectsApi(api_client)
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL)
    name = args.names[0]
    w = watch.Watch()
    events = []
    writer = None
    failures = []

    def write():
        try:
            write_sequence(api_client, args.namespace, name)
        except Exception as error:  # reported below; ends the watch at once instead of at its timeout
            failures.append(f"{type(error).__name__}: {error}")
            w.stop()

    # No resource_version: the server starts with ADDED for what exists, then live changes.
    for event in w.stream(custom.list_namespaced_custom_object, GROUP, VERSION, args.namespace, PLURAL, timeout_seconds=30):
        events.append(summary(event))
        emit(event=events[-1])
        if writer is None:
            # The watch is open (its first event arrived): now change things.
            writer = threading.Thread(target=write)
            writer.start()
        if event["type"] == "DELETED" and summary(event)["name"] == name:
            w.stop()
    if writer is not None:
        writer.join()
    if failures:
        raise RuntimeError(f"writing while watching failed: {failures[0]}")
    emit(result={"listedResourceVersion": listed["metadata"]["resourceVersion"], "events": events})


def scenario_watch_bool_spellings(api_client, args):
    """The same watch with the booleans spelled as Python's str() writes them: watch=True.

    This client's generated methods lower-case booleans before they reach the URL, but its own
    generic request path (ApiClient.param_serialize + call_api, which DynamicClient also uses)
    sends string values as they are: code that passes "True" puts watch=True on the wire, as
    Python code formatting a bool with str() does. kube-apiserver reads that as true.
    """
    custom = client.CustomObjectsApi(api_client)
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL)
    rv = listed["metadata"]["resourceVersion"]
    name = args.names[0]
    write_sequence(api_client, args.namespace, name)
    method, url, headers, body, post_params = api_client.param_serialize(
        "GET",
        "/apis/{group}/{version}/namespaces/{namespace}/{plural}",
        path_params={"group": GROUP, "version": VERSION, "namespace": args.namespace, "plural": PLURAL},
        query_params=[("watch", "True"), ("allowWatchBookmarks", "True"), ("resourceVersion", rv), ("timeoutSeconds", "5")],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    emit(request=url)
    response = api_client.call_api(method, url, headers, body, post_params, _request_timeout=20)
    decoder = watch.Watch()
    events = []
    try:
        for line in iter_resp_lines(response.response):
            event = decoder.unmarshal_event(line, None)
            if event is None:
                continue
            if event["type"] == "BOOKMARK":
                continue
            events.append(summary(event))
            emit(event=events[-1])
            if event["type"] == "DELETED":
                break
    finally:
        response.response.close()
    emit(result={
        "status": response.status,
        "contentType": response.getheader("Content-Type"),
        "events": events,
    })


def scenario_relist_after_gone(api_client, args):
    """An informer-style loop: watch from a resourceVersion the server no longer has, get 410, relist, resume."""
    custom = client.CustomObjectsApi(api_client)
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL)
    stale = listed["metadata"]["resourceVersion"]
    # More writes than the server's watch history holds: `stale` falls out of its window.
    for name in args.names:
        custom.create_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL, httpproxy(name, f"{name}.local"))
    gone = None
    try:
        for _ in watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, VERSION, args.namespace, PLURAL, resource_version=stale):
            break
    except ApiException as error:
        gone = {"status": error.status, "reason": error.reason}
    emit(gone=gone)
    # Relist: the fresh resourceVersion is inside the window again.
    relisted = custom.list_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL)
    fresh = relisted["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL, httpproxy("after-relist", "after.local"))
    resumed = []
    w = watch.Watch()
    for event in w.stream(custom.list_namespaced_custom_object, GROUP, VERSION, args.namespace, PLURAL, resource_version=fresh, timeout_seconds=30):
        resumed.append(summary(event))
        w.stop()
    emit(result={
        "staleResourceVersion": stale,
        "gone": gone,
        "relisted": sorted(item["metadata"]["name"] for item in relisted["items"]),
        "relistedResourceVersion": fresh,
        "resumed": resumed,
    })


def scenario_status(api_client, args):
    """Status subresource: merge-patch through /status, a stale replace gets 409, /status GET."""
    custom = client.CustomObjectsApi(api_client)
    name = args.names[0]
    created = custom.create_namespaced_custom_object(GROUP, VERSION, args.namespace, PLURAL, httpproxy(name, f"{name}.local"))
    condition = {
        "type": "EnvoyProgrammed",
        "status": "True",
        "observedGeneration": created["metadata"]["generation"],
        "reason": "Programmed",
        "message": "1/1 Envoys programmed",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    # A dict body is sent as application/merge-patch+json; the spec in it must be ignored on /status.
    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, args.namespace, PLURAL, name,
        {"status": {"conditions": [condition]}, "spec": {"virtualhost": {"fqdn": "ignored.local"}}},
    )
    conflict = None
    stale = dict(patched)
    stale["metadata"] = dict(patched["metadata"], resourceVersion=created["metadata"]["resourceVersion"])
    stale["status"] = {"conditions": [dict(condition, status="False")]}
    try:
        custom.replace_namespaced_custom_object_status(GROUP, VERSION, args.namespace, PLURAL, name, stale)
    except ApiException as error:
        conflict = {"status": error.status, "reason": json.loads(error.body).get("reason")}
    fetched = custom.get_namespaced_custom_object_status(GROUP, VERSION, args.namespace, PLURAL, name)
    emit(result={
        "created": {"resourceVersion": created["metadata"]["resourceVersion"], "generation": created["metadata"]["generation"]},
        "patched": {
            "resourceVersion": patched["metadata"]["resourceVersion"],
            "generation": patched["metadata"]["generation"],
            "fqdn": patched["spec"]["virtualhost"]["fqdn"],
            "conditions": patched.get("status", {}).get("conditions"),
        },
        "conflict": conflict,
        "fetched": {"resourceVersion": fetched["metadata"]["resourceVersion"], "conditions": fetched.get("status", {}).get("conditions")},
    })


SCENARIOS = {
    "list": scenario_list,
    "watch": scenario_watch,
    "watch-bool-spellings": scenario_watch_bool_spellings,
    "relist-after-gone": scenario_relist_after_gone,
    "status": scenario_status,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--names", default="", type=lambda value: [n for n in value.split(",") if n])
    args = parser.parse_args()
    api_client = config.new_client_from_config(config_file=args.kubeconfig)
    try:
        SCENARIOS[args.scenario](api_client, args)
    except Exception as error:  # the test prints what the client saw
        emit(error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
        sys.exit(1)


if __name__ == "__main__":
    main()
