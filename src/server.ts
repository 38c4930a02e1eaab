import type { z } from "zod";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp, API_BASE_PATH } from "./app.js";
import { loadModelsConfig, type ModelsConfig, type ServerConfig } from "./config.js";
import { CharacterCatalog } from "./characters/CharacterCatalog.js";
import { CharacterDefinition, charactersPathFor, fromDefinition, loadCharactersFile } from "./characters/charactersFile.js";
import { ensureDemoModels } from "./fixtures/demoModels.js";
import { createLogger, type Logger } from "./logger.js";
import { ModelManager } from "./models/ModelManager.js";
import { databasePath, openStore, type Db } from "./store/Store.js";

export interface RunningServer {
  url: string;
  baseUrl: string;
  db: Db;
  models: ModelManager;
  logger: Logger;
  server: Server;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), disposes models, closes the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Overrides reading models.config.json (tests build their own registry). */
  modelsConfig?: ModelsConfig;
  /** Overrides reading characters.json next to the registry. */
  characters?: z.input<typeof CharacterDefinition>[];
  logger?: Logger;
  gpu?: "auto" | false;
}

export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const modelsConfig = options.modelsConfig ?? loadModelsConfig(config.configPath, config.dataDir);
  const generated = await ensureDemoModels(modelsConfig);
  for (const path of generated) logger.info({ path }, "generated demo model");

  const textModels = new Set(modelsConfig.models.filter((m) => m.type === "text").map((m) => m.id));
  const fileCharacters = options.characters
    ? options.characters.map((c) => fromDefinition(CharacterDefinition.parse(c), Date.now()))
    : loadCharactersFile(charactersPathFor(config.configPath), textModels);

  const db = openStore(databasePath(config.dataDir));
  const models = new ModelManager(modelsConfig, { gpu: options.gpu ?? "auto" });
  const characters = new CharacterCatalog(db, fileCharacters);
  const app = createApp({ config, db, models, characters, logger, startedAt: Date.now() });
  const inFlight = new InFlightRequests();

  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer((req, res) => {
      inFlight.track(res);
      app(req, res);
    });
    s.once("error", reject);
    s.listen(config.port, config.host, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        // Once no request is in flight every remaining connection is idle (or half-closed by
        // its client): close them all. Past the grace period, cut what still streams.
        const cut = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
        inFlight.onIdle(() => server.closeAllConnections());
      });
      await models.dispose();
      db.close();
    })());
  return { url, baseUrl: `${url}${API_BASE_PATH}`, db, models, logger, server, close };
}

/** Counts responses not yet closed, so shutdown knows when only idle connections remain. */
class InFlightRequests {
  private count = 0;
  private waiters: (() => void)[] = [];

  track(res: ServerResponse): void {
    this.count++;
    res.once("close", () => {
      this.count--;
      if (this.count === 0) for (const waiter of this.waiters.splice(0)) waiter();
    });
  }

  onIdle(callback: () => void): void {
    if (this.count === 0) callback();
    else this.waiters.push(callback);
  }
}
