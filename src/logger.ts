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

export interface LoggerOptions {
  /** Where the JSON lines go; default stderr. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}

/** Structured JSON logs on stderr. Authorization headers, wallet sign-ins, payments and secrets are never logged. */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  return pino(
    {
      level,
      base: { service: "hearth" },
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    },
    options.destination ?? pino.destination(2),
  );
}
