import { randomUUID } from "node:crypto";
import { statement, type Db } from "./Store.js";

export interface CharacterReview {
  id: string;
  characterSlug: string;
  accountId: string;
  /** The reviewer's account name. */
  username: string;
  rating: number;
  message: string | null;
  locale: string | null;
  createdAt: number;
}

export interface NewCharacterReview {
  characterSlug: string;
  accountId: string;
  rating: number;
  message?: string;
  locale?: string;
}

const SELECT = `SELECT r.id, r.character_slug AS characterSlug, r.account_id AS accountId, a.name AS username, r.rating, r.message,
  r.locale, r.created_at AS createdAt FROM character_reviews r JOIN accounts a ON a.id = r.account_id`;

/** Adds an account's review of a character; undefined when the account already reviewed it. */
export function insertCharacterReview(db: Db, review: NewCharacterReview, now = Date.now()): CharacterReview | undefined {
  const id = randomUUID();
  const inserted = statement(
    db,
    `INSERT INTO character_reviews (id, character_slug, account_id, rating, message, locale, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (character_slug, account_id) DO NOTHING`,
  ).run(id, review.characterSlug, review.accountId, review.rating, review.message ?? null, review.locale ?? null, now);
  return inserted.changes > 0 ? getCharacterReview(db, id) : undefined;
}

export function getCharacterReview(db: Db, id: string): CharacterReview | undefined {
  return statement(db, `${SELECT} WHERE r.id = ?`).get(id) as CharacterReview | undefined;
}

/** A page of a character's reviews, newest first, and how many there are. */
export function listCharacterReviews(db: Db, characterSlug: string, limit: number, offset: number): { reviews: CharacterReview[]; total: number; averageRating: number } {
  const reviews = statement(db, `${SELECT} WHERE r.character_slug = ? ORDER BY r.created_at DESC, r.id LIMIT ? OFFSET ?`).all(characterSlug, limit, offset) as CharacterReview[];
  const { total, average } = statement(db, "SELECT COUNT(*) AS total, AVG(rating) AS average FROM character_reviews WHERE character_slug = ?").get(characterSlug) as {
    total: number;
    average: number | null;
  };
  return { reviews, total, averageRating: average ?? 0 };
}

export interface CharacterRating {
  count: number;
  sum: number;
  /** The viewer's own rating, when asked for a viewer who rated. */
  viewerRating: number | null;
}

/** Ratings per reviewed character (count, sum, and the viewer's own), for the catalog's stats and sorting. */
export function characterRatings(db: Db, viewerAccountId?: string): Map<string, CharacterRating> {
  const rows = statement(
    db,
    `SELECT character_slug AS slug, COUNT(*) AS count, SUM(rating) AS sum, MAX(CASE WHEN account_id = ? THEN rating END) AS viewerRating
       FROM character_reviews GROUP BY character_slug`,
  ).all(viewerAccountId ?? null) as (CharacterRating & { slug: string })[];
  return new Map(rows.map(({ slug, ...rating }) => [slug, rating]));
}

export function deleteCharacterReview(db: Db, id: string): boolean {
  return statement(db, "DELETE FROM character_reviews WHERE id = ?").run(id).changes > 0;
}
