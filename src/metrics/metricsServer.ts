import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Metrics } from "./Metrics.js";

/**
 * The optional scrape listener (`--metrics-port`): GET /metrics without authentication, on the
 * API's host. Nothing else is served there, so exposing it to a Prometheus network exposes no API.
 */
export async function startMetricsServer(metrics: Metrics, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "Only GET /metrics is served on the metrics port" }));
      return;
    }
    metrics.render().then(
      (body) => res.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" }).end(req.method === "HEAD" ? undefined : body),
      (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(error as Error).message}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
