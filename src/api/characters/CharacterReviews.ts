import type { z } from "zod";
import { ApiError, NotFoundError, PermissionDeniedError } from "../../errors.js";
import type { CharacterCatalog } from "../../characters/CharacterCatalog.js";
import { type CharacterReview, deleteCharacterReview, getCharacterReview, insertCharacterReview, listCharacterReviews } from "../../store/characterReviews.js";
import type { Db } from "../../store/Store.js";
import type { CharacterReview as WireReview, CharacterReviewList, CharacterReviewsQuery, CreateCharacterReviewRequest } from "./schema.js";

/** Reviews of the catalog's characters: read by any key, written once per account, removed by their author or the operator. */
export class CharacterReviews {
  constructor(
    private readonly db: Db,
    private readonly catalog: CharacterCatalog,
    private readonly now: () => number,
  ) {}

  list(slug: string, query: z.infer<typeof CharacterReviewsQuery>, viewerAccountId: string | undefined): z.infer<typeof CharacterReviewList> {
    const characterId = this.characterId(slug);
    const { reviews, total, averageRating } = listCharacterReviews(this.db, slug, query.pageSize, (query.page - 1) * query.pageSize);
    return {
      object: "list",
      data: reviews.map((review) => toWire(review, characterId, viewerAccountId)),
      pagination: { page: query.page, pageSize: query.pageSize, total, totalPages: Math.ceil(total / query.pageSize) },
      summary: { averageRating, totalReviews: total },
    };
  }

  create(slug: string, request: z.infer<typeof CreateCharacterReviewRequest>, accountId: string): z.infer<typeof WireReview> {
    const characterId = this.characterId(slug);
    const review = insertCharacterReview(this.db, { characterSlug: slug, accountId, ...request }, this.now());
    if (!review) throw new ApiError(409, `This account has already reviewed "${slug}": delete that review to write another`, { code: "REVIEW_EXISTS" });
    return toWire(review, characterId, accountId);
  }

  delete(slug: string, id: string, caller: { accountId: string; operator: boolean }): void {
    const review = getCharacterReview(this.db, id);
    if (!review || review.characterSlug !== slug) throw new NotFoundError(`No review ${id} of "${slug}"`);
    if (review.accountId !== caller.accountId && !caller.operator) throw new PermissionDeniedError("Only the review's author or the node operator may delete it");
    deleteCharacterReview(this.db, id);
  }

  private characterId(slug: string): string {
    const character = this.catalog.get(slug);
    if (!character) throw new NotFoundError(`Character not found: no character with slug "${slug}"`);
    return character.id;
  }
}

function toWire(review: CharacterReview, characterId: string, viewerAccountId: string | undefined): z.infer<typeof WireReview> {
  return {
    characterId,
    createdAt: new Date(review.createdAt).toISOString(),
    id: review.id,
    isOwner: review.accountId === viewerAccountId,
    locale: review.locale,
    message: review.message,
    rating: review.rating,
    userAvatarUrl: null,
    username: review.username,
  };
}
