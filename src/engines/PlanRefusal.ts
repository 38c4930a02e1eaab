/**
 * What a chat engine refuses while planning a request, in the engine's own terms (which prompt,
 * which token): the service that sent the request names the wire field and writes the 400.
 */
export type PlanRefusal =
  /** The rendered prompt (of completion prompt `prompt`, null for a chat or a lone prompt) fills the context. */
  | { kind: "promptTooLong"; prompt: number | null; promptTokens: number; contextSize: number }
  /** Token `position` of completion prompt `prompt` is not in the vocabulary. */
  | { kind: "tokenOutsideVocabulary"; prompt: number | null; position: number; id: number; vocabularySize: number }
  /** An empty completion prompt, and no beginning-of-sequence token to start from. */
  | { kind: "emptyPrompt"; prompt: number | null }
  /** A suffix (fill in the middle), and no FIM prefix/suffix/middle tokens. */
  | { kind: "noInfillTokens" }
  /** An echo the engine cannot produce (a relay echoes text prompts without log probabilities only). */
  | { kind: "echoUnavailable" };

export class PlanRefusalError extends Error {
  constructor(
    readonly refusal: PlanRefusal,
    readonly modelId: string,
  ) {
    super(`the model "${modelId}" refused the request: ${refusal.kind}`);
    this.name = "PlanRefusalError";
  }
}
