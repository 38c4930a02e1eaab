import { pino } from "pino";

export type Logger = pino.Logger;

/** Structured JSON logs on stderr. Authorization headers, wallet sign-ins, payments and secrets are never logged. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "hearth" },
    redact: {
      paths: [
        "req.headers.authorization",
        "*.authorization",
        "*.secret",
        "*.apiKey",
        // Wallet sign-ins and payment payloads are bearer-like within their validity window.
        'req.headers["sign-in-with-x"]',
        'req.headers["x-sign-in-with-x"]',
        'req.headers["payment-signature"]',
        'req.headers["x-payment"]',
        'req.headers["x-402-payment"]',
        "*.settlerPrivateKey",
        "*.feePayerSecretKey",
      ],
      censor: "[redacted]",
    },
  }, pino.destination(2));
}
