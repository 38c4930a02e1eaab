import type { Command } from "commander";
import { existsSync } from "node:fs";
import { CharacterSlug, ExampleMessage, type Character } from "../characters/Character.js";
import { charactersPathFor, loadCharactersFile } from "../characters/charactersFile.js";
import { loadModelsConfig } from "../models/loadModelsConfig.js";
import { loadServerConfig } from "../config/serverSettings.js";
import { deleteCharacter, getStoredCharacter, insertCharacter, listStoredCharacters } from "../store/characters.js";
import { databasePath, openStore } from "../store/Store.js";
import { printTable } from "./keys.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";

const list = (value: string) =>
  value
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);

/** `--example user:Hello --example "assistant:Ahoy!"`, in order. */
function collectExample(value: string, previous: ExampleMessage[] = []): ExampleMessage[] {
  const colon = value.indexOf(":");
  const parsed = ExampleMessage.safeParse({ role: value.slice(0, colon), content: value.slice(colon + 1) });
  if (colon < 0 || !parsed.success) throw new Error(`--example: expected user:<text> or assistant:<text>, got "${value}"`);
  return [...previous, parsed.data];
}

/** The registry and characters.json, when they can be read, to check model ids and slugs against. */
function readRegistry(flags: SettingFlags): { models: Set<string> | null; fileCharacters: Character[] } {
  const config = loadServerConfig(settingFlags(flags));
  if (!existsSync(config.configPath)) return { models: null, fileCharacters: [] };
  const models = new Set(
    loadModelsConfig(config.configPath, config.dataDir)
      .models.filter((m) => m.type === "text")
      .map((m) => m.id),
  );
  return { models, fileCharacters: loadCharactersFile(charactersPathFor(config.configPath), models) };
}

function withStore<T>(flags: SettingFlags, run: (db: ReturnType<typeof openStore>) => T): T {
  const db = openStore(databasePath(loadServerConfig(settingFlags(flags)).dataDir));
  try {
    return run(db);
  } finally {
    db.close();
  }
}

interface AddFlags extends SettingFlags {
  slug: string;
  name: string;
  model: string;
  systemPrompt: string;
  description?: string;
  tags?: string[];
  categories?: string[];
  example?: ExampleMessage[];
  adult?: boolean;
  featured?: boolean;
  webEnabled?: boolean;
  photoUrl?: string;
  author?: string;
}

export function registerCharactersCommand(program: Command): void {
  const characters = program
    .command("characters")
    .description("manage the characters (personas) chat requests select with service_parameters.character_slug; also read from characters.json next to the registry");

  const add = characters
    .command("add")
    .description("add a character (stored in the data directory; a running server sees it on the next request)")
    .requiredOption("--slug <slug>", "what clients send as character_slug (lower-case letters, digits, '-')")
    .requiredOption("--name <name>", "display name")
    .requiredOption("--model <id>", "the text model used when a request names none")
    .requiredOption("--system-prompt <text>", "the persona: the system prompt placed before the conversation")
    .option("--description <text>", "shown in GET /characters")
    .option("--tags <a,b>", "comma-separated tags", list)
    .option("--categories <a,b>", "comma-separated categories", list)
    .option("--example <role:text>", "an example message shown before the conversation (repeat, in order)", collectExample)
    .option("--adult", "mark as adult content")
    .option("--featured", "list first")
    .option("--web-enabled", "mark as web-enabled")
    .option("--photo-url <url>", "a picture of the character")
    .option("--author <name>", "who made it (shown only as an anonymized code)", "admin");
  addSettingOption(add, "dataDir");
  addSettingOption(add, "configPath");
  add.action((flags: AddFlags) => {
    const slug = CharacterSlug.safeParse(flags.slug);
    if (!slug.success) throw new Error(`--slug: ${slug.error.issues[0]!.message}`);
    const registry = readRegistry(flags);
    if (registry.models && !registry.models.has(flags.model)) {
      throw new Error(`--model: no text model "${flags.model}" in the registry (${[...registry.models].join(", ")})`);
    }
    if (registry.fileCharacters.some((c) => c.slug === flags.slug)) throw new Error(`--slug: "${flags.slug}" is defined in characters.json`);
    withStore(flags, (db) => {
      if (getStoredCharacter(db, flags.slug)) throw new Error(`--slug: a character "${flags.slug}" exists already (remove it first)`);
      const character = insertCharacter(db, {
        slug: flags.slug,
        name: flags.name,
        description: flags.description ?? null,
        modelId: flags.model,
        systemPrompt: flags.systemPrompt,
        exampleMessages: flags.example ?? [],
        tags: flags.tags ?? [],
        categories: flags.categories ?? [],
        adult: flags.adult === true,
        featured: flags.featured === true,
        webEnabled: flags.webEnabled === true,
        photoUrl: flags.photoUrl ?? null,
        author: flags.author ?? "admin",
      });
      process.stdout.write(`Added character ${character.slug} (${character.id}) on model ${character.modelId}\n`);
    });
  });

  const ls = characters.command("list").description("list the characters of characters.json and of the data directory").option("--json", "print JSON instead of a table");
  addSettingOption(ls, "dataDir");
  addSettingOption(ls, "configPath");
  ls.action((flags: SettingFlags & { json?: boolean }) => {
    const { fileCharacters } = readRegistry(flags);
    const stored = withStore(flags, (db) => listStoredCharacters(db)).filter((c) => !fileCharacters.some((f) => f.slug === c.slug));
    const all = [...fileCharacters, ...stored];
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
      return;
    }
    printTable(
      ["SLUG", "NAME", "MODEL", "SOURCE", "TAGS"],
      all.map((c) => [c.slug, c.name, c.modelId, c.source === "file" ? "characters.json" : "cli", c.tags.join(",")]),
    );
  });

  const remove = characters.command("remove").description("remove a character added with `characters add`").argument("<slug>", "the character's slug");
  addSettingOption(remove, "dataDir");
  remove.action((slug: string, flags: SettingFlags) => {
    withStore(flags, (db) => {
      if (!deleteCharacter(db, slug)) {
        process.stderr.write(`hearth: no character "${slug}" in the data directory (characters.json ones are edited in the file)\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`Removed ${slug}\n`);
    });
  });
}
