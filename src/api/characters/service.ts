import { anonymizedAuthor, type Character } from "../../characters/Character.js";
import type { CharacterCatalog } from "../../characters/CharacterCatalog.js";
import { NotFoundError } from "../../errors.js";
import type { CharacterRecord, ListCharactersQuery } from "./schema.js";

/** The public record: personas (system prompts, examples) stay on the server. */
export function toCharacterRecord(character: Character): CharacterRecord {
  return {
    adult: character.adult,
    author: anonymizedAuthor(character.author),
    createdAt: new Date(character.createdAt).toISOString(),
    description: character.description,
    featured: character.featured,
    id: character.id,
    name: character.name,
    shareUrl: null,
    photoUrl: character.photoUrl,
    slug: character.slug,
    // A private node has no public ratings or imports.
    stats: { averageRating: 0, imports: 0, ratingCount: 0, ratingSum: 0, userRating: null },
    tags: character.tags,
    updatedAt: new Date(character.updatedAt).toISOString(),
    webEnabled: character.webEnabled,
    modelId: character.modelId,
  };
}

export class CharacterService {
  constructor(private readonly catalog: CharacterCatalog) {}

  list(query: ListCharactersQuery): { records: CharacterRecord[]; total: number } {
    const lower = (values?: string[]) => values?.map((v) => v.toLowerCase());
    const categories = lower(query.categories);
    const tags = lower(query.tags);
    const search = query.search?.trim().toLowerCase();
    const matches = this.catalog.list().filter((c) => {
      if (categories && !c.categories.some((x) => categories.includes(x.toLowerCase()))) return false;
      if (tags && !c.tags.some((x) => tags.includes(x.toLowerCase()))) return false;
      if (query.modelId && !query.modelId.includes(c.modelId)) return false;
      if (query.isAdult && c.adult !== (query.isAdult === "true")) return false;
      if (query.isWebEnabled && c.webEnabled !== (query.isWebEnabled === "true")) return false;
      // No model on a self-hosted node is a "pro" model.
      if (query.isPro === "true") return false;
      if (search) {
        // "#tag" searches tags only; anything else searches name, description and tags.
        if (search.startsWith("#")) return c.tags.some((t) => t.toLowerCase() === search.slice(1));
        const haystack = [c.name, c.description ?? "", ...c.tags].join("\n").toLowerCase();
        if (!haystack.includes(search)) return false;
      }
      return true;
    });
    const direction = query.sortOrder === "asc" ? 1 : -1;
    const byRecency = (a: Character, b: Character) => (a.createdAt - b.createdAt) * direction || a.slug.localeCompare(b.slug);
    // Without ratings or imports, rating-based orders fall back to featured, then recency.
    const sorted = [...matches].sort((a, b) => (query.sortBy === "mostRecent" ? byRecency(a, b) : (Number(a.featured) - Number(b.featured)) * direction || byRecency(a, b)));
    return { records: sorted.slice(query.offset, query.offset + query.limit).map(toCharacterRecord), total: matches.length };
  }

  get(slug: string): CharacterRecord {
    const character = this.catalog.get(slug);
    if (!character) throw new NotFoundError(`Character not found: no character with slug "${slug}"`);
    return toCharacterRecord(character);
  }
}
