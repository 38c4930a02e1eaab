import type { Command } from "commander";
import { ConfigError, loadServerConfig } from "../config.js";
import { startServer } from "../server.js";
import { addSettingOption, type SettingFlags } from "./options.js";

export function registerServeCommand(program: Command): void {
  const serve = program.command("serve").description("start the HTTP server (the default demo models are generated on first start)");
  for (const name of ["host", "port", "dataDir", "configPath", "logLevel"] as const) addSettingOption(serve, name);
  serve.action(async (flags: SettingFlags) => {
    let running;
    try {
      const config = loadServerConfig(flags);
      running = await startServer(config);
      const dataDirFlag = config.dataDir === loadServerConfig({}).dataDir ? "" : ` --data-dir ${config.dataDir}`;
      process.stdout.write(
        [
          `Hearth is listening on ${running.baseUrl}`,
          `Models: ${running.models.list().map((m) => m.id).join(", ") || "(none)"}`,
          `Create an API key:  npx hearth keys create --name me --admin --usd 10${dataDirFlag}`,
          `Then: curl ${running.baseUrl}/chat/completions -H "Authorization: Bearer <key>" -H "Content-Type: application/json" \\`,
          `        -d '{"model":"${running.models.list()[0]?.id ?? "MODEL"}","messages":[{"role":"user","content":"Hello"}]}'`,
          "",
        ].join("\n"),
      );
    } catch (error) {
      if (error instanceof ConfigError) {
        process.stderr.write(`hearth: configuration error\n${error.message}\n`);
        process.exit(2);
      }
      throw error;
    }
    const server = running;
    const shutdown = (signal: string) => {
      server.logger.info({ signal }, "shutting down");
      server.close().then(
        () => process.exit(0),
        (error: unknown) => {
          server.logger.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
  });
}
