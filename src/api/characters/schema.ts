import { z } from "zod";

/** GET /characters and GET /characters/{slug}: the reference's listing shapes and filters. */

/** A repeated query parameter arrives as an array, a comma-separated one as a string: both become a list. */
const List = (maxLength: number) =>
  z.preprocess(
    (value) =>
      value === undefined
        ? undefined
        : (Array.isArray(value) ? value : [value])
            .flatMap((v) => String(v).split(","))
            .map((v) => v.trim())
            .filter(Boolean),
    z.array(z.string().max(maxLength)).max(20).optional(),
  );
const Flag = z.enum(["true", "false"]).optional();

export const ListCharactersQuery = z.looseObject({
  categories: List(100),
  tags: List(100),
  modelId: List(200),
  isAdult: Flag,
  isPro: Flag,
  isWebEnabled: Flag,
  search: z.string().max(200).optional(),
  limit: z.coerce.number().int().positive().max(100).default(50),
  offset: z.coerce.number().int().min(0).default(0),
  sortBy: z.enum(["featured", "highestRating", "highlyRated", "highlyRatedAndRecent", "imports", "mostRecent", "ratingCount"]).optional(),
  sortOrder: z.enum(["asc", "desc"]).default("desc"),
});
export type ListCharactersQuery = z.infer<typeof ListCharactersQuery>;

export const CharacterRecord = z.object({
  adult: z.boolean(),
  author: z.string(),
  createdAt: z.string(),
  description: z.string().nullable(),
  featured: z.boolean(),
  id: z.string(),
  name: z.string(),
  shareUrl: z.string().nullable(),
  photoUrl: z.string().nullable(),
  slug: z.string(),
  stats: z.object({
    averageRating: z.number(),
    imports: z.number(),
    ratingCount: z.number(),
    ratingSum: z.number(),
    userRating: z.number().nullable(),
  }),
  tags: z.array(z.string()),
  updatedAt: z.string(),
  webEnabled: z.boolean(),
  modelId: z.string(),
});
export type CharacterRecord = z.infer<typeof CharacterRecord>;

export const CharacterList = z.object({ object: z.literal("list"), data: z.array(CharacterRecord) });
export const CharacterResponse = z.object({ object: z.literal("character"), data: CharacterRecord });

/** GET /characters/{slug}/reviews (the provider's getCharacterReviews). */
export const CharacterReviewsQuery = z.looseObject({
  page: z.coerce.number().int().positive().default(1),
  pageSize: z.coerce.number().int().positive().max(100).default(20),
});

export const CharacterReview = z.object({
  characterId: z.string(),
  createdAt: z.string(),
  id: z.string(),
  isOwner: z.boolean().describe("Whether the caller's account wrote this review"),
  locale: z.string().nullable(),
  message: z.string().nullable(),
  rating: z.number().int().min(1).max(5),
  userAvatarUrl: z.string().nullable(),
  username: z.string().describe("The reviewer's account name"),
});

export const CharacterReviewList = z.object({
  object: z.literal("list"),
  data: z.array(CharacterReview),
  pagination: z.object({ page: z.number().int(), pageSize: z.number().int(), total: z.number().int(), totalPages: z.number().int() }),
  /** Every review of the character (not only this page's): their mean rating (0 with none) and count. */
  summary: z.object({ averageRating: z.number(), totalReviews: z.number().int() }),
});

/** POST /characters/{slug}/reviews: this node's extension; one review per account and character. */
export const CreateCharacterReviewRequest = z.strictObject({
  rating: z.number().int().min(1).max(5),
  message: z.string().trim().min(1).max(2000).optional(),
  locale: z.string().min(2).max(35).optional(),
});

export const DeletedCharacterReview = z.object({ id: z.string(), object: z.literal("review"), deleted: z.literal(true) });
