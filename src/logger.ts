import { createRequire } from "node:module";
import { pino } from "pino";

export type Logger = pino.Logger;

/** Header names that carry credentials (bearer keys, cookies, wallet sign-ins, payment payloads). */
const SECRET_HEADERS = ["authorization", "cookie", "set-cookie", "x-api-key", "sign-in-with-x", "x-sign-in-with-x", "payment-signature", "x-payment", "x-402-payment"];
/** Field names that hold secrets wherever they appear (top level or one object down). */
const SECRET_FIELDS = ["authorization", "cookie", "apiKey", "api_key", "secret", "signature", "privateKey", "private_key", "settlerPrivateKey", "feePayerSecretKey", "secretKey"];

/**
 * Paths pino blanks out. Requests are logged by route and key id only, never with headers or
 * bodies; this is the safety net if a header object or a payload reaches a log call anyway.
 */
export const REDACTED_PATHS = [
  ...SECRET_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `headers["${h}"]`, `*.headers["${h}"]`]),
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`]),
  // The wallet config's secrets, where a config object is logged.
  "*.*.settlerPrivateKey",
  "*.*.feePayerSecretKey",
];

/** How log lines look: one JSON object per line (for files and collectors) or pino-pretty's coloured lines (for a person). */
export type LogFormat = "json" | "pretty";
/** What `--log-format` accepts: "auto" picks pretty for a terminal and JSON for anything else. */
export const LOG_FORMAT_CHOICES = ["auto", "json", "pretty"] as const;
export type LogFormatChoice = (typeof LOG_FORMAT_CHOICES)[number];

export interface LogFormatInputs {
  requested: LogFormatChoice;
  /** Whether the stream the logs go to is a terminal. */
  isTerminal: boolean;
  /** Whether the pino-pretty module can be resolved; without it every format is JSON. */
  prettyAvailable: boolean;
}

/**
 * The format a logger writes. "auto" is pretty only on a terminal, so a redirected or piped log
 * stays machine-readable; pretty without pino-pretty installed falls back to JSON rather than
 * failing to start the server.
 */
export function chooseLogFormat({ requested, isTerminal, prettyAvailable }: LogFormatInputs): LogFormat {
  if (!prettyAvailable) return "json";
  if (requested === "auto") return isTerminal ? "pretty" : "json";
  return requested;
}

/** Whether pino-pretty is installed; pino loads it by name in a worker thread, so resolve it the same way first. */
export function isPrettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve("pino-pretty");
    return true;
  } catch {
    return false;
  }
}

export interface LoggerOptions {
  /** Where the JSON lines go; default stderr. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
  /** JSON lines (the default) or pino-pretty's lines on stderr; ignored when a destination is given. */
  format?: LogFormat;
}

/** Structured logs on stderr. Authorization headers, wallet sign-ins, payments and secrets are never logged. */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  const settings: pino.LoggerOptions = {
    level,
    base: { service: "hearth" },
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  if (options.format === "pretty" && !options.destination) {
    // A worker-thread transport, as pino-pretty recommends: formatting stays off the request path.
    const transport = pino.transport({
      target: "pino-pretty",
      options: { destination: 2, colorize: process.stderr.isTTY === true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname,service" },
    });
    return pino(settings, transport);
  }
  return pino(settings, options.destination ?? pino.destination(2));
}
