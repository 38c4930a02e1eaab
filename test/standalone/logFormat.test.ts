import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { chooseLogFormat, createLogger, type LogFormatInputs } from "../../src/logger.js";

describe("chooseLogFormat", () => {
  const cases: [LogFormatInputs, "json" | "pretty"][] = [
    [{ requested: "auto", isTerminal: true, prettyAvailable: true }, "pretty"],
    [{ requested: "auto", isTerminal: false, prettyAvailable: true }, "json"],
    [{ requested: "json", isTerminal: true, prettyAvailable: true }, "json"],
    [{ requested: "pretty", isTerminal: false, prettyAvailable: true }, "pretty"],
    // Without pino-pretty every request falls back to JSON instead of failing to start.
    [{ requested: "auto", isTerminal: true, prettyAvailable: false }, "json"],
    [{ requested: "pretty", isTerminal: true, prettyAvailable: false }, "json"],
  ];
  it.each(cases)("%o -> %s", (inputs, expected) => {
    expect(chooseLogFormat(inputs)).toBe(expected);
  });
});

describe("createLogger", () => {
  it("writes JSON lines with secrets redacted to a given destination, whatever the format", () => {
    let written = "";
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString();
        done();
      },
    });
    const logger = createLogger("info", { destination, format: "pretty" });
    logger.info({ headers: { authorization: "Bearer sk-secret" } }, "hello");
    const record = JSON.parse(written) as Record<string, unknown>;
    expect(record).toMatchObject({ msg: "hello", service: "hearth", headers: { authorization: "[redacted]" } });
  });
});
