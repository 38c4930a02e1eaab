import { LlamaVocabularyType, type LlamaModel, type Token } from "node-llama-cpp";

/**
 * The most UTF-8 bytes one token of this model's vocabulary stands for, read once at load (in
 * slices, between turns of the event loop); undefined where no such bound holds for input text.
 *
 * It makes a character bound sound: SentencePiece and byte-level BPE vocabularies turn every
 * byte of the input into some token (byte fallback), so an input of N UTF-16 code units
 * (each at least one UTF-8 byte) has at least N / longest tokens, and an input longer than
 * `tokens × longest` characters cannot fit `tokens`. WordPiece and Unigram vocabularies can
 * drop characters (whitespace, accents) or map a whole unknown word to one token, so they get
 * no bound (their inputs are measured in bounded chunks instead).
 */
export async function longestTokenBytes(model: LlamaModel): Promise<number | undefined> {
  if (model.vocabularyType !== LlamaVocabularyType.spm && model.vocabularyType !== LlamaVocabularyType.bpe) return undefined;
  const size = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
  if (size === 0) return undefined;
  // An unknown character becomes one token: at most 4 bytes, whatever the vocabulary.
  let longest = 4;
  for (let start = 0; start < size; start += TOKENS_PER_TURN) {
    // A real vocabulary (150,000 tokens and more) takes over 100 ms to detokenize: in turns of the
    // event loop, so that requests to other models move meanwhile.
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    const end = Math.min(size, start + TOKENS_PER_TURN);
    for (let token = start; token < end; token++) {
      // Special tokens as their text: a longer piece only loosens the bound.
      longest = Math.max(longest, Buffer.byteLength(model.detokenize([token as Token], true)));
    }
  }
  return longest;
}

/** Tokens detokenized in one turn of the event loop: about 6 ms on a 2-core machine. */
const TOKENS_PER_TURN = 8192;
