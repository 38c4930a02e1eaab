import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { ConfigError } from "../config/ConfigError.js";
import { CharacterSlug, ExampleMessage, idForSlug, type Character } from "./Character.js";

/** One character in characters.json. */
export const CharacterDefinition = z.strictObject({
  slug: CharacterSlug,
  name: z.string().min(1),
  description: z.string().optional(),
  /** The model used when a request names no model. */
  model: z.string().min(1),
  systemPrompt: z.string().min(1),
  /** A short exchange shown to the model before the conversation, to set the voice. */
  exampleMessages: z.array(ExampleMessage).default([]),
  tags: z.array(z.string().max(100)).default([]),
  categories: z.array(z.string().max(100)).default([]),
  adult: z.boolean().default(false),
  featured: z.boolean().default(false),
  webEnabled: z.boolean().default(false),
  photoUrl: z.url().optional(),
  shareUrl: z.url().optional(),
  author: z.string().default("operator"),
  createdAt: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
});
export type CharacterDefinition = z.infer<typeof CharacterDefinition>;

export const CharactersFile = z.strictObject({ $schema: z.string().optional(), characters: z.array(CharacterDefinition) }).superRefine((file, ctx) => {
  const seen = new Set<string>();
  file.characters.forEach((character, index) => {
    if (seen.has(character.slug)) ctx.addIssue({ code: "custom", path: ["characters", index, "slug"], message: `duplicate slug "${character.slug}"` });
    seen.add(character.slug);
  });
});

/** characters.json lives next to models.config.json. */
export const charactersPathFor = (modelsConfigPath: string) => join(dirname(modelsConfigPath), "characters.json");

/** Reads characters.json if there is one; a bad file stops start-up with the offending field named. */
export function loadCharactersFile(path: string, knownModels: ReadonlySet<string>): Character[] {
  if (!existsSync(path)) return [];
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
  const parsed = CharactersFile.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${path}: ${i.path.join(".") || "(root)"}: ${i.message}`).join("\n"));
  }
  const modifiedAt = statSync(path).mtimeMs;
  return parsed.data.characters.map((definition, index) => {
    if (!knownModels.has(definition.model)) {
      throw new ConfigError(`${path}: characters.${index}.model: no text model "${definition.model}" in the model registry`);
    }
    return fromDefinition(definition, modifiedAt);
  });
}

export function fromDefinition(definition: CharacterDefinition, modifiedAt: number): Character {
  const createdAt = definition.createdAt ? Date.parse(definition.createdAt) : modifiedAt;
  return {
    id: idForSlug(definition.slug),
    slug: definition.slug,
    name: definition.name,
    description: definition.description ?? null,
    modelId: definition.model,
    systemPrompt: definition.systemPrompt,
    exampleMessages: definition.exampleMessages,
    tags: definition.tags,
    categories: definition.categories,
    adult: definition.adult,
    featured: definition.featured,
    webEnabled: definition.webEnabled,
    photoUrl: definition.photoUrl ?? null,
    author: definition.author,
    createdAt,
    updatedAt: Math.max(createdAt, modifiedAt),
    source: "file",
  };
}
