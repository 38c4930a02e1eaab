import { anonymizedAuthor, type Character } from "../../characters/Character.js";
import type { CharacterCatalog } from "../../characters/CharacterCatalog.js";
import { NotFoundError } from "../../errors.js";
import type { CharacterRating } from "../../store/characterReviews.js";
import type { CharacterRecord, ListCharactersQuery } from "./schema.js";

const NO_RATINGS: CharacterRating = { count: 0, sum: 0, viewerRating: null };
/** "Highly rated": an average of at least this many stars. */
const HIGHLY_RATED = 4;

/** The public record: personas (system prompts, examples) stay on the server. */
export function toCharacterRecord(character: Character, rating: CharacterRating = NO_RATINGS): CharacterRecord {
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
    // Ratings are this node's reviews; a private node has no imports.
    stats: {
      averageRating: rating.count ? rating.sum / rating.count : 0,
      imports: 0,
      ratingCount: rating.count,
      ratingSum: rating.sum,
      userRating: rating.viewerRating,
    },
    tags: character.tags,
    updatedAt: new Date(character.updatedAt).toISOString(),
    webEnabled: character.webEnabled,
    modelId: character.modelId,
  };
}

export class CharacterService {
  constructor(
    private readonly catalog: CharacterCatalog,
    /** Ratings per slug from the reviews, with the viewer's own. */
    private readonly ratings: (viewerAccountId?: string) => Map<string, CharacterRating>,
  ) {}

  list(query: ListCharactersQuery, viewerAccountId?: string): { records: CharacterRecord[]; total: number } {
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
    const ratings = this.ratings(viewerAccountId);
    const ratingOf = (c: Character) => ratings.get(c.slug) ?? NO_RATINGS;
    const average = (c: Character) => (ratingOf(c).count ? ratingOf(c).sum / ratingOf(c).count : 0);
    const byRecency = (a: Character, b: Character) => (a.createdAt - b.createdAt) * direction || a.slug.localeCompare(b.slug);
    const byFeatured = (a: Character, b: Character) => (Number(a.featured) - Number(b.featured)) * direction || byRecency(a, b);
    const orders: Record<NonNullable<ListCharactersQuery["sortBy"]>, (a: Character, b: Character) => number> = {
      mostRecent: byRecency,
      featured: byFeatured,
      highestRating: (a, b) => (average(a) - average(b)) * direction || (ratingOf(a).count - ratingOf(b).count) * direction || byRecency(a, b),
      ratingCount: (a, b) => (ratingOf(a).count - ratingOf(b).count) * direction || byRecency(a, b),
      highlyRated: (a, b) => (Number(average(a) >= HIGHLY_RATED) - Number(average(b) >= HIGHLY_RATED)) * direction || orders.ratingCount(a, b),
      highlyRatedAndRecent: (a, b) => (Number(average(a) >= HIGHLY_RATED) - Number(average(b) >= HIGHLY_RATED)) * direction || byRecency(a, b),
      // No imports on a self-hosted node: every count is 0, so featured, then recency.
      imports: byFeatured,
    };
    const sorted = [...matches].sort(orders[query.sortBy ?? "featured"]);
    return { records: sorted.slice(query.offset, query.offset + query.limit).map((c) => toCharacterRecord(c, ratingOf(c))), total: matches.length };
  }

  get(slug: string, viewerAccountId?: string): CharacterRecord {
    const character = this.catalog.get(slug);
    if (!character) throw new NotFoundError(`Character not found: no character with slug "${slug}"`);
    return toCharacterRecord(character, this.ratings(viewerAccountId).get(slug));
  }
}
