import { randomUUID } from "node:crypto";
import type { Character, ExampleMessage } from "../characters/Character.js";
import { statement, type Db } from "./Store.js";

/** Characters created by admins with `hearth characters add`, stored in SQLite. */

export type NewCharacter = Omit<Character, "id" | "createdAt" | "updatedAt" | "source">;

interface Row {
  id: string;
  slug: string;
  name: string;
  description: string | null;
  model_id: string;
  system_prompt: string;
  example_messages: string;
  tags: string;
  categories: string;
  adult: number;
  featured: number;
  web_enabled: number;
  photo_url: string | null;
  author: string;
  created_at: number;
  updated_at: number;
}

function toCharacter(row: Row): Character {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    description: row.description,
    modelId: row.model_id,
    systemPrompt: row.system_prompt,
    exampleMessages: JSON.parse(row.example_messages) as ExampleMessage[],
    tags: JSON.parse(row.tags) as string[],
    categories: JSON.parse(row.categories) as string[],
    adult: row.adult === 1,
    featured: row.featured === 1,
    webEnabled: row.web_enabled === 1,
    photoUrl: row.photo_url,
    author: row.author,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    source: "store",
  };
}

export function insertCharacter(db: Db, character: NewCharacter, now = Date.now()): Character {
  const id = randomUUID();
  statement(
    db,
    `INSERT INTO characters (id, slug, name, description, model_id, system_prompt, example_messages, tags, categories, adult, featured,
       web_enabled, photo_url, author, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id,
    character.slug,
    character.name,
    character.description,
    character.modelId,
    character.systemPrompt,
    JSON.stringify(character.exampleMessages),
    JSON.stringify(character.tags),
    JSON.stringify(character.categories),
    character.adult ? 1 : 0,
    character.featured ? 1 : 0,
    character.webEnabled ? 1 : 0,
    character.photoUrl,
    character.author,
    now,
    now,
  );
  return { ...character, id, createdAt: now, updatedAt: now, source: "store" };
}

export function listStoredCharacters(db: Db): Character[] {
  return (statement(db, "SELECT * FROM characters ORDER BY created_at, slug").all() as Row[]).map(toCharacter);
}

export function getStoredCharacter(db: Db, slug: string): Character | undefined {
  const row = statement(db, "SELECT * FROM characters WHERE slug = ?").get(slug) as Row | undefined;
  return row ? toCharacter(row) : undefined;
}

export function deleteCharacter(db: Db, slug: string): boolean {
  return statement(db, "DELETE FROM characters WHERE slug = ?").run(slug).changes > 0;
}
