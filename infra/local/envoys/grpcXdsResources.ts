// The smallest xDS configuration a gRPC xDS client (@grpc/grpc-js-xds) accepts for a target
// `xds:///<listener>`, per gRFC A27 (xDS-based global load balancing):
// - LDS: a Listener named like the target whose `api_listener` is an HttpConnectionManager,
//   either with an inline route_config or `rds` pointing at a RouteConfiguration via ADS, and whose
//   http_filters end with the router filter;
// - RDS: a RouteConfiguration with a virtual host matching the target's authority, routing to a cluster;
// - CDS: an EDS Cluster whose eds_config is ADS;
// - EDS: a ClusterLoadAssignment with a weighted locality of endpoints.
// Used by the real-client tests; a control plane wanting gRPC clients must produce the same shape.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  HTTP_CONNECTION_MANAGER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  ROUTER_TYPE_URL,
  packAny,
  type AnyResource,
} from '../../../common/xds';

export interface GrpcRouteSpec {
  listenerName: string;
  routeConfigName: string;
  clusterName: string;
  /** `host:port` pairs (IPv4 literal host) serving the backend. */
  endpoints: readonly { host: string; port: number }[];
}

export interface GrpcXdsResources {
  listener: AnyResource;
  routeConfiguration: AnyResource;
  cluster: AnyResource;
  clusterLoadAssignment: AnyResource;
}

export function grpcListener(listenerName: string, routeConfigName: string): AnyResource {
  const httpConnectionManager = packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, {
    rds: { route_config_name: routeConfigName, config_source: { ads: {}, resource_api_version: 'V3' } },
    http_filters: [{ name: 'envoy.filters.http.router', typed_config: packAny(ROUTER_TYPE_URL, {}) }],
  });
  return packAny(LISTENER_TYPE_URL, { name: listenerName, api_listener: { api_listener: httpConnectionManager } });
}

export function grpcRouteConfiguration(routeConfigName: string, clusterName: string): AnyResource {
  return packAny(ROUTE_CONFIGURATION_TYPE_URL, {
    name: routeConfigName,
    virtual_hosts: [
      { name: 'all', domains: ['*'], routes: [{ match: { prefix: '' }, route: { cluster: clusterName } }] },
    ],
  });
}

export function grpcCluster(clusterName: string): AnyResource {
  return packAny(CLUSTER_TYPE_URL, {
    name: clusterName,
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
    lb_policy: 'ROUND_ROBIN',
  });
}

export function grpcClusterLoadAssignment(clusterName: string, endpoints: GrpcRouteSpec['endpoints']): AnyResource {
  return packAny(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, {
    cluster_name: clusterName,
    endpoints: [
      {
        locality: { region: 'local', zone: 'local-a' },
        load_balancing_weight: { value: 1 },
        lb_endpoints: endpoints.map((e) => ({
          endpoint: { address: { socket_address: { address: e.host, port_value: e.port } } },
          health_status: 'HEALTHY',
        })),
      },
    ],
  });
}

export function grpcXdsResources(spec: GrpcRouteSpec): GrpcXdsResources {
  return {
    listener: grpcListener(spec.listenerName, spec.routeConfigName),
    routeConfiguration: grpcRouteConfiguration(spec.routeConfigName, spec.clusterName),
    cluster: grpcCluster(spec.clusterName),
    clusterLoadAssignment: grpcClusterLoadAssignment(spec.clusterName, spec.endpoints),
  };
}
