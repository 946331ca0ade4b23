// A real grpc-go xDS client as a long-running peer for test/support/xds-peers.ts: it resolves
// xds:///<target> through the xDS server given on the command line, calls the JSON echo backend of
// infra/local/envoys/realClient.ts every --rpc-interval-ms, and reports what its own xDS client holds,
// read from its own CSDS service (the client's own ACKED/NACKED/DOES_NOT_EXIST per resource), every
// --snapshot-interval-ms, printing a line only when that changed.
//
// stdout: one JSON object per line (the protocol is documented in test/support/xds-peers.ts);
// stderr: logs. The process exits when stdin closes (its parent is gone) or on SIGTERM/SIGINT.
//
// Usage: grpc-go-xds --xds-server host:port --node-id ID --node-cluster C --target NAME
//
//	[--rpc-interval-ms N] [--rpc-timeout-ms N] [--snapshot-interval-ms N]
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds/csds"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	// Registers the xds:/// resolver and the xDS balancers.
	_ "google.golang.org/grpc/xds"
)

const (
	bootstrapEnv = "GRPC_XDS_BOOTSTRAP_CONFIG"
	echoMethod   = "/xdsprogrammed.test.Echo/Echo"
)

type options struct {
	xdsServer          string
	nodeID             string
	nodeCluster        string
	target             string
	rpcIntervalMs      int
	rpcTimeoutMs       int
	snapshotIntervalMs int
}

func parseOptions() options {
	var o options
	flag.StringVar(&o.xdsServer, "xds-server", "", "xDS server host:port (plaintext)")
	flag.StringVar(&o.nodeID, "node-id", "", "xDS node id")
	flag.StringVar(&o.nodeCluster, "node-cluster", "", "xDS node cluster")
	flag.StringVar(&o.target, "target", "", "resolves xds:///<target>")
	flag.IntVar(&o.rpcIntervalMs, "rpc-interval-ms", 100, "pause between two echo RPCs")
	flag.IntVar(&o.rpcTimeoutMs, "rpc-timeout-ms", 1000, "deadline of one echo RPC")
	flag.IntVar(&o.snapshotIntervalMs, "snapshot-interval-ms", 25, "pause between two CSDS queries")
	flag.Parse()
	if o.xdsServer == "" || o.nodeID == "" || o.target == "" {
		fmt.Fprintln(os.Stderr, "grpc-go-xds: --xds-server, --node-id and --target are required")
		os.Exit(2)
	}
	if o.rpcIntervalMs < 1 || o.rpcTimeoutMs < 1 || o.snapshotIntervalMs < 1 {
		fmt.Fprintln(os.Stderr, "grpc-go-xds: intervals and timeouts must be at least 1 ms")
		os.Exit(2)
	}
	return o
}

func bootstrapJSON(o options) string {
	node := map[string]any{"id": o.nodeID, "locality": map[string]any{}}
	if o.nodeCluster != "" {
		node["cluster"] = o.nodeCluster
	}
	b, err := json.Marshal(map[string]any{
		"xds_servers": []any{map[string]any{
			"server_uri":      o.xdsServer,
			"channel_creds":   []any{map[string]any{"type": "insecure"}},
			"server_features": []any{"xds_v3"},
		}},
		"node": node,
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// grpc-go reads GRPC_XDS_BOOTSTRAP_CONFIG into a package variable of internal/envconfig while the
// program initialises, before main runs, and its public in-process alternative
// (xds.NewXDSResolverWithConfigForTesting) gives the channel an xDS client that CSDS does not report.
// So the bootstrap made from the flags is put into the environment and the program re-executes
// itself once; the second run finds it set and goes on.
func ensureBootstrap(o options) {
	want := bootstrapJSON(o)
	if os.Getenv(bootstrapEnv) == want {
		return
	}
	self, err := os.Executable()
	if err != nil {
		fatal("cannot find own executable: %v", err)
	}
	// Any bootstrap already in the environment goes, GRPC_XDS_BOOTSTRAP (a file) too: grpc-go prefers
	// the file to the content.
	env := []string{}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GRPC_XDS_BOOTSTRAP=") || strings.HasPrefix(kv, bootstrapEnv+"=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, bootstrapEnv+"="+want)
	if err := syscall.Exec(self, os.Args, env); err != nil {
		fatal("re-exec with the bootstrap: %v", err)
	}
}

// --- output ----------------------------------------------------------------------------------

var outMu sync.Mutex

func emit(line map[string]any) {
	b, err := json.Marshal(line)
	if err != nil {
		fatal("json: %v", err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
		// The reader is gone: nobody is left to report to.
		os.Exit(0)
	}
}

func now() int64 { return time.Now().UnixMilli() }

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "grpc-go-xds: "+format+"\n", args...)
	os.Exit(1)
}

// --- the echo RPC with raw bytes -------------------------------------------------------------

// rawCodec sends and receives the message bytes as they are: the echo backend speaks JSON.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T is not *[]byte", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T is not *[]byte", v)
	}
	*b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "raw" }

// The canonical upper-case names (codes.Code's String() says "Unavailable"); the protocol uses the
// names of grpc/status.proto, as the Python peer's grpc.StatusCode does.
var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}

func rpcLoop(ctx context.Context, conn *grpc.ClientConn, o options) {
	for seq := 0; ctx.Err() == nil; seq++ {
		request, _ := json.Marshal(map[string]string{"message": fmt.Sprintf("%s#%d", o.nodeID, seq)})
		callCtx, cancel := context.WithTimeout(ctx, time.Duration(o.rpcTimeoutMs)*time.Millisecond)
		var reply []byte
		err := conn.Invoke(callCtx, echoMethod, &request, &reply, grpc.ForceCodec(rawCodec{}))
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			st := status.Convert(err)
			name, ok := codeNames[st.Code()]
			if !ok {
				name = st.Code().String()
			}
			emit(map[string]any{"event": "rpc", "at": now(), "ok": false, "code": name, "details": st.Message()})
		} else {
			var parsed struct {
				Message *string `json:"message"`
				Backend *string `json:"backend"`
			}
			if jerr := json.Unmarshal(reply, &parsed); jerr != nil || parsed.Backend == nil || parsed.Message == nil {
				emit(map[string]any{"event": "rpc", "at": now(), "ok": false, "code": "INTERNAL", "details": fmt.Sprintf("echo reply is not {message, backend}: %q", reply)})
			} else {
				emit(map[string]any{"event": "rpc", "at": now(), "ok": true, "backend": *parsed.Backend})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(o.rpcIntervalMs) * time.Millisecond):
		}
	}
}

// --- CSDS ------------------------------------------------------------------------------------

type resource struct {
	TypeURL string `json:"typeUrl"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Status  string `json:"status"`
	Error   string `json:"error,omitempty"`
	Value   string `json:"value,omitempty"`
}

// configOf flattens the client's own CSDS answer: the generic_xds_configs of every ClientConfig of
// this node (grpc-go keeps one xDS client per data-plane target and reports each with its
// client_scope), passing the client's status word through.
func configOf(response *v3statuspb.ClientStatusResponse, nodeID string) []resource {
	out := []resource{}
	for _, config := range response.GetConfig() {
		if config.GetNode().GetId() != nodeID {
			continue
		}
		for _, generic := range config.GetGenericXdsConfigs() {
			r := resource{
				TypeURL: generic.GetTypeUrl(),
				Name:    generic.GetName(),
				Version: generic.GetVersionInfo(),
				Status:  v3adminpb.ClientResourceStatus_name[int32(generic.GetClientStatus())],
			}
			if r.Status == "" {
				r.Status = fmt.Sprintf("%d", generic.GetClientStatus())
			}
			if es := generic.GetErrorState(); es != nil {
				r.Error = es.GetDetails()
			}
			if value := generic.GetXdsConfig(); value != nil {
				r.Value = base64.StdEncoding.EncodeToString(value.GetValue())
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TypeURL != out[j].TypeURL {
			return out[i].TypeURL < out[j].TypeURL
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func snapshotLoop(ctx context.Context, admin string, o options) {
	conn, err := grpc.NewClient(admin, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fatal("admin channel: %v", err)
	}
	defer conn.Close()
	stub := v3statuspb.NewClientStatusDiscoveryServiceClient(conn)
	last := ""
	for ctx.Err() == nil {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		response, err := stub.FetchClientStatus(callCtx, &v3statuspb.ClientStatusRequest{})
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fatal("own CSDS query failed: %v", err)
		}
		resources := configOf(response, o.nodeID)
		key, _ := json.Marshal(resources)
		if string(key) != last {
			last = string(key)
			emit(map[string]any{"event": "config", "at": now(), "resources": resources})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(o.snapshotIntervalMs) * time.Millisecond):
		}
	}
}

func main() {
	o := parseOptions()
	ensureBootstrap(o)

	ctx, stop := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		stop()
	}()
	// The harness keeps our stdin open; EOF means it is gone (even SIGKILLed), so we go too.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal("admin listen: %v", err)
	}
	adminServer := grpc.NewServer()
	csdsServer, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		fatal("csds: %v", err)
	}
	v3statuspb.RegisterClientStatusDiscoveryServiceServer(adminServer, csdsServer)
	go func() {
		if err := adminServer.Serve(listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			fatal("admin serve: %v", err)
		}
	}()
	admin := listener.Addr().String()

	conn, err := grpc.NewClient("xds:///"+o.target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fatal("channel to xds:///%s: %v", o.target, err)
	}
	emit(map[string]any{"event": "ready", "at": now(), "admin": admin, "client": "grpc-go/" + grpc.Version})
	// grpc.NewClient is lazy: without this the xDS resolver (and the ADS stream) would wait for the
	// first RPC.
	conn.Connect()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rpcLoop(ctx, conn, o) }()
	go func() { defer wg.Done(); snapshotLoop(ctx, admin, o) }()
	<-ctx.Done()
	wg.Wait()
	_ = conn.Close()
	csdsServer.Close()
	adminServer.Stop()
}
