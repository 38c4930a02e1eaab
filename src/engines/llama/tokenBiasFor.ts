import { TokenBias, type LlamaModel } from "node-llama-cpp";

/**
 * The standard's logit_bias as node-llama-cpp's TokenBias: each value is added to its token's
 * logit before sampling (-100 bans a token in practice, +100 all but forces it). TokenBias.set
 * leaves end-of-generation tokens out, because node-llama-cpp's own chat loop could then run
 * forever; Hearth's token loop ends every answer at max_tokens, so their biases go into the map
 * the sampler reads as well, and a client may keep a model from ending its answer, as with the
 * standard. The map is node-llama-cpp's internal one; a test pins that the bias of an
 * end-of-text token still reaches the sampler.
 */
export function tokenBiasFor(model: LlamaModel, logitBias: ReadonlyMap<number, number>): TokenBias {
  const bias = TokenBias.for(model);
  const biases = (bias as unknown as { _biases?: unknown })._biases;
  if (!(biases instanceof Map)) throw new Error("node-llama-cpp's TokenBias no longer keeps its biases in _biases: tokenBiasFor needs updating");
  for (const [token, value] of logitBias) biases.set(token, value);
  return bias;
}
