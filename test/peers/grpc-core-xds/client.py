"""A real gRPC C-core xDS client (through grpcio) as a long-running peer for test/support/xds-peers.ts.

It resolves xds:///<target> through the xDS server given on the command line, calls the JSON echo
backend of infra/local/envoys/realClient.ts every --rpc-interval-ms, and reports what its own xDS
client holds, read from its own CSDS service (grpc_csds, served on a local admin port) every
--snapshot-interval-ms, printing a line only when that changed.

stdout: one JSON object per line (the protocol is documented in test/support/xds-peers.ts);
stderr: logs. The process exits when stdin closes (its parent is gone) or on SIGTERM/SIGINT.

Usage: client.py --xds-server host:port --node-id ID --node-cluster C --target NAME
                 [--rpc-interval-ms N] [--rpc-timeout-ms N] [--snapshot-interval-ms N]
"""

import argparse
import base64
import json
import os
import signal
import sys
import threading
import time

ECHO_METHOD = "/xdsprogrammed.test.Echo/Echo"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xds-server", required=True, help="xDS server host:port (plaintext)")
    parser.add_argument("--node-id", required=True)
    parser.add_argument("--node-cluster", default="")
    parser.add_argument("--target", required=True, help="resolves xds:///<target>")
    parser.add_argument("--rpc-interval-ms", type=int, default=100)
    parser.add_argument("--rpc-timeout-ms", type=int, default=1000)
    parser.add_argument("--snapshot-interval-ms", type=int, default=25)
    args = parser.parse_args()
    if min(args.rpc_interval_ms, args.rpc_timeout_ms, args.snapshot_interval_ms) < 1:
        parser.error("intervals and timeouts must be at least 1 ms")
    return args


def bootstrap(args):
    node = {"id": args.node_id, "locality": {}}
    if args.node_cluster:
        node["cluster"] = args.node_cluster
    return {
        "xds_servers": [
            {
                "server_uri": args.xds_server,
                "channel_creds": [{"type": "insecure"}],
                "server_features": ["xds_v3"],
            }
        ],
        "node": node,
    }


ARGS = parse_args()
# C-core reads the bootstrap when it creates its first XdsClient (on the first xds: channel), from
# GRPC_XDS_BOOTSTRAP (a file, preferred) or GRPC_XDS_BOOTSTRAP_CONFIG. Set before grpc is imported,
# and with the file variable removed so an inherited one cannot win.
os.environ.pop("GRPC_XDS_BOOTSTRAP", None)
os.environ["GRPC_XDS_BOOTSTRAP_CONFIG"] = json.dumps(bootstrap(ARGS))

import concurrent.futures  # noqa: E402

import grpc  # noqa: E402
import grpc_csds  # noqa: E402
from envoy.admin.v3 import config_dump_shared_pb2  # noqa: E402
from envoy.service.status.v3 import csds_pb2, csds_pb2_grpc  # noqa: E402

STOP = threading.Event()
OUT_LOCK = threading.Lock()


def now_ms():
    return int(time.time() * 1000)


def emit(line):
    text = json.dumps(line, separators=(",", ":")) + "\n"
    with OUT_LOCK:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            # The reader is gone: nobody is left to report to.
            os._exit(0)


def status_name(value):
    try:
        return config_dump_shared_pb2.ClientResourceStatus.Name(value)
    except ValueError:
        return str(value)


def config_of(response, node_id):
    """The generic_xds_configs of every ClientConfig of this node, the client's status word as is.

    C-core keeps one XdsClient per data-plane target and reports each as a ClientConfig of its own
    (client_scope); this process has one target, and the filter by node id keeps it to our node.
    """
    resources = []
    for config in response.config:
        if config.node.id != node_id:
            continue
        for generic in config.generic_xds_configs:
            entry = {
                "typeUrl": generic.type_url,
                "name": generic.name,
                "version": generic.version_info,
                "status": status_name(generic.client_status),
            }
            if generic.HasField("error_state") and generic.error_state.details:
                entry["error"] = generic.error_state.details
            if generic.HasField("xds_config"):
                entry["value"] = base64.b64encode(generic.xds_config.value).decode("ascii")
            resources.append(entry)
    resources.sort(key=lambda r: (r["typeUrl"], r["name"]))
    return resources


def snapshot_loop(admin):
    channel = grpc.insecure_channel(admin)
    stub = csds_pb2_grpc.ClientStatusDiscoveryServiceStub(channel)
    last = None
    interval = ARGS.snapshot_interval_ms / 1000.0
    try:
        while not STOP.is_set():
            try:
                response = stub.FetchClientStatus(csds_pb2.ClientStatusRequest(), timeout=5)
            except grpc.RpcError as error:
                if STOP.is_set():
                    return
                print(f"grpc-core-xds: own CSDS query failed: {error}", file=sys.stderr, flush=True)
                os._exit(1)
            resources = config_of(response, ARGS.node_id)
            key = json.dumps(resources, sort_keys=True)
            if key != last:
                last = key
                emit({"event": "config", "at": now_ms(), "resources": resources})
            STOP.wait(interval)
    finally:
        channel.close()


def rpc_loop(channel):
    # No serializers: the request and the reply are the JSON bytes the echo backend speaks.
    echo = channel.unary_unary(ECHO_METHOD)
    interval = ARGS.rpc_interval_ms / 1000.0
    seq = 0
    while not STOP.is_set():
        request = json.dumps({"message": f"{ARGS.node_id}#{seq}"}).encode("utf-8")
        seq += 1
        try:
            reply = echo(request, timeout=ARGS.rpc_timeout_ms / 1000.0)
        except grpc.RpcError as error:
            if STOP.is_set():
                return
            emit({"event": "rpc", "at": now_ms(), "ok": False, "code": error.code().name, "details": error.details() or ""})
        else:
            try:
                parsed = json.loads(reply.decode("utf-8"))
                backend = parsed["backend"]
                if not isinstance(backend, str) or not isinstance(parsed["message"], str):
                    raise ValueError("not strings")
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                emit({"event": "rpc", "at": now_ms(), "ok": False, "code": "INTERNAL", "details": f"echo reply is not {{message, backend}}: {reply!r}"})
            else:
                emit({"event": "rpc", "at": now_ms(), "ok": True, "backend": backend})
        STOP.wait(interval)


def watch_stdin():
    # The harness keeps our stdin open; EOF means it is gone (even SIGKILLed), so we go too.
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (OSError, ValueError):
        pass
    STOP.set()


def main():
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())
    signal.signal(signal.SIGINT, lambda *_: STOP.set())
    threading.Thread(target=watch_stdin, daemon=True).start()

    admin_server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
    grpc_csds.add_csds_servicer(admin_server)
    port = admin_server.add_insecure_port("127.0.0.1:0")
    admin_server.start()
    admin = f"127.0.0.1:{port}"

    channel = grpc.insecure_channel(f"xds:///{ARGS.target}")
    emit({"event": "ready", "at": now_ms(), "admin": admin, "client": f"grpc-core/{grpc.__version__}"})
    # Starts the xDS resolver (and the ADS stream) now rather than at the first RPC.
    channel.subscribe(lambda _state: None, try_to_connect=True)

    threads = [
        threading.Thread(target=rpc_loop, args=(channel,), daemon=True),
        threading.Thread(target=snapshot_loop, args=(admin,), daemon=True),
    ]
    for thread in threads:
        thread.start()
    # Signals reach Python only on the main thread, and only between bytecodes: wait in short steps.
    while not STOP.wait(0.2):
        pass
    for thread in threads:
        thread.join(timeout=2)
    channel.close()
    admin_server.stop(0)
    with OUT_LOCK:
        sys.stdout.flush()
    # Not a normal interpreter exit: the stdin watcher is blocked in a read, and finalisation would
    # abort on its buffer lock.
    os._exit(0)


if __name__ == "__main__":
    main()
