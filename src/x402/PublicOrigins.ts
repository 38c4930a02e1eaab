import { networkInterfaces } from "node:os";

/** One way clients reach this node: the SIWX domain (host[:port]) and its origin. */
export interface PublicOrigin {
  /** host[:port] as it appears in a sign-in message's domain and in a Host header. */
  domain: string;
  /** scheme://host[:port] */
  origin: string;
  /** origin plus the path prefix a reverse proxy adds ("" when none). */
  base: string;
}

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", ""]);

/**
 * The origins a sign-in may be bound to. With --public-url: exactly that one. Without: the
 * addresses the node listens on, with the port it got (a wildcard host means every local
 * interface address, plus localhost), so a client on the LAN signs for the host it calls and
 * a signature made for another node is refused. The Host header only picks among these; it
 * is never trusted to add one.
 */
export class PublicOrigins {
  private listen: { host: string; port: number } | undefined;
  private cache: { at: number; origins: PublicOrigin[] } | undefined;

  constructor(private readonly publicUrl: string | undefined) {}

  /** Called once the server has its port (the port may be 0 until then). */
  setListenAddress(host: string, port: number): void {
    this.listen = { host, port };
    this.cache = undefined;
  }

  list(): PublicOrigin[] {
    if (this.publicUrl) {
      const url = new URL(this.publicUrl);
      const prefix = url.pathname.replace(/\/+$/, "");
      return [{ domain: url.host.toLowerCase(), origin: url.origin, base: `${url.origin}${prefix}` }];
    }
    if (!this.listen) return [];
    const now = Date.now();
    if (this.cache && now - this.cache.at < 30_000) return this.cache.origins;
    const origins = this.listenOrigins(this.listen.host, this.listen.port);
    this.cache = { at: now, origins };
    return origins;
  }

  /** The origin a sign-in's domain names, if it is one of ours. */
  match(domain: string): PublicOrigin | undefined {
    const wanted = domain.toLowerCase();
    return this.list().find((o) => o.domain === wanted);
  }

  /** The origin to advertise to a request: the one its Host names when that is ours, else the first. */
  forHost(host: string | undefined): PublicOrigin {
    const origins = this.list();
    const matched = host ? this.match(host) : undefined;
    const origin = matched ?? origins[0];
    if (!origin) throw new Error("the node's public origin is not known yet (server not listening)");
    return origin;
  }

  private listenOrigins(host: string, port: number): PublicOrigin[] {
    const hosts: string[] = [];
    if (WILDCARDS.has(host)) {
      const wantV6 = host.includes(":");
      for (const addresses of Object.values(networkInterfaces())) {
        for (const a of addresses ?? []) {
          if (a.family === "IPv4") hosts.push(a.address);
          else if (wantV6 && !a.address.startsWith("fe80")) hosts.push(`[${a.address}]`);
        }
      }
      hosts.push("localhost");
    } else {
      hosts.push(host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);
      if (host === "127.0.0.1" || host === "::1" || host === "[::1]") hosts.push("localhost");
    }
    const seen = new Set<string>();
    const origins: PublicOrigin[] = [];
    for (const h of hosts) {
      const url = new URL(`http://${h}:${port}`);
      if (seen.has(url.host)) continue;
      seen.add(url.host);
      origins.push({ domain: url.host.toLowerCase(), origin: url.origin, base: url.origin });
    }
    return origins;
  }
}
