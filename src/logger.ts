import { pino } from "pino";

export type Logger = pino.Logger;

/** Structured JSON logs on stderr. Authorization headers and secrets are never logged. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "hearth" },
    redact: { paths: ["req.headers.authorization", "*.authorization", "*.secret", "*.apiKey"], censor: "[redacted]" },
  }, pino.destination(2));
}
