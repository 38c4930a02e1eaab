import { createHash } from "node:crypto";
import { z } from "zod";

/**
 * A character: a persona applied to chat requests through service_parameters.character_slug
 * (its system prompt, its default model and example exchanges), listed by GET /characters.
 * Characters come from characters.json next to models.config.json or from `hearth characters add`.
 */
export interface Character {
  id: string;
  slug: string;
  name: string;
  description: string | null;
  modelId: string;
  systemPrompt: string;
  exampleMessages: ExampleMessage[];
  tags: string[];
  categories: string[];
  adult: boolean;
  featured: boolean;
  webEnabled: boolean;
  photoUrl: string | null;
  /** Who defined it, kept only as a short anonymized code in listings. */
  author: string;
  createdAt: number;
  updatedAt: number;
  source: "file" | "store";
}

export const ExampleMessage = z.strictObject({ role: z.enum(["user", "assistant"]), content: z.string().min(1) });
export type ExampleMessage = z.infer<typeof ExampleMessage>;

/** Slugs are what clients type: lower-case letters, digits and dashes. */
export const CharacterSlug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,99}$/, "slugs use lower-case letters, digits and '-' (at most 100)");

/** A stable id for a character defined in a file (the same slug always gets the same id). */
export function idForSlug(slug: string): string {
  const hex = createHash("sha256").update(`hearth-character:${slug}`).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The reference's "short anonymized identifier derived from the character author". */
export function anonymizedAuthor(author: string): string {
  return BigInt(`0x${createHash("sha256").update(author).digest("hex").slice(0, 12)}`)
    .toString(36)
    .slice(0, 5);
}
