import {
  type ChatHistoryItem,
  type ChatModelFunctions,
  type ChatWrapper,
  chatWrappers,
  type ResolveChatWrapperOptions,
  resolveChatWrapper,
  type SpecializedChatWrapperTypeName,
  specializedChatWrapperTypeNames,
} from "node-llama-cpp";

/**
 * A specialized chat wrapper as node-llama-cpp's resolution chose it for a template: its type
 * and the settings it was built with, plain JSON, so that the child process that ran the
 * resolution can send it and the server can build the same wrapper in a few milliseconds
 * (the resolution that finds it renders the template against every option set of every
 * compatible wrapper: up to 2 s on the event loop for current templates, Muse's and Harmony's).
 */
export interface SpecializedChoice {
  type: SpecializedChatWrapperTypeName;
  settings: Record<string, unknown>;
}

/** The specialized wrapper a choice names, through node-llama-cpp's public resolution by type. */
export function buildSpecialized(choice: SpecializedChoice): ChatWrapper {
  const options = { type: choice.type, customWrapperSettings: { [choice.type]: choice.settings } } as ResolveChatWrapperOptions;
  const wrapper = resolveChatWrapper(options);
  if (!wrapper) throw new Error(`node-llama-cpp built no "${choice.type}" chat wrapper`);
  return wrapper;
}

/**
 * Which type and settings rebuild `wrapper`, a specialized wrapper the resolution returned: the
 * candidates are the settings the resolution applies for each option set it tries, then the
 * wrapper's defaults, and the first whose wrapper has the same fields and renders a set of
 * conversations (system prompt, turns, thoughts, tools, a tool call and its result) exactly as
 * `wrapper` does is the choice. Undefined when none does, or the settings are not plain JSON:
 * the server then resolves the template itself, as before. The option sets are read through
 * node-llama-cpp's internal `_getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate`; if a
 * later version drops it, only the defaults are tried.
 */
export function specializedChoiceOf(wrapper: ChatWrapper): SpecializedChoice | undefined {
  const type = specializedChatWrapperTypeNames.find((name) => chatWrappers[name] === wrapper.constructor);
  if (!type) return undefined;
  const Wrapper = chatWrappers[type] as unknown as { _getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate?(): unknown[] };
  const optionSets = Wrapper._getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate?.() ?? [];
  const candidates = [...optionSets.map(appliedSettings), {}];
  let target: string;
  try {
    target = fingerprint(wrapper);
  } catch {
    return undefined;
  }
  for (const settings of candidates) {
    if (!isPlainJson(settings)) continue;
    try {
      const choice = { type, settings };
      if (fingerprint(buildSpecialized(choice)) === target) return choice;
    } catch {
      // A candidate that does not build or render is not the one.
    }
  }
  return undefined;
}

/** An option set is a settings object, or [test settings, applied settings, Jinja options]: the applied ones build the wrapper. */
function appliedSettings(optionSet: unknown): unknown {
  if (Array.isArray(optionSet)) return optionSet[1] ?? {};
  return optionSet ?? {};
}

function isPlainJson(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  try {
    return JSON.stringify(JSON.parse(JSON.stringify(value))) === JSON.stringify(value) && !containsDate(value);
  } catch {
    return false;
  }
}

function containsDate(value: unknown): boolean {
  if (value instanceof Date) return true;
  if (value && typeof value === "object") return Object.values(value).some(containsDate);
  return false;
}

const FUNCTIONS: ChatModelFunctions = {
  weather: { description: "The weather in a city", params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  time: { description: "The time now" },
};

/** Conversations whose rendering tells the option sets apart (turn ends, thoughts kept or not, tool syntax). */
const CONVERSATIONS: ChatHistoryItem[][] = [
  [
    { type: "system", text: "You are terse." },
    { type: "user", text: "Hello" },
    { type: "model", response: [] },
  ],
  [
    { type: "user", text: "Hi" },
    { type: "model", response: ["Hello! How can I help?"] },
    { type: "user", text: "Tell me a joke." },
    { type: "model", response: [] },
  ],
  [
    { type: "system", text: "Think first." },
    { type: "user", text: "2+2?" },
    { type: "model", response: [{ type: "segment", segmentType: "thought", text: "Add them.", ended: true }, "4"] },
    { type: "user", text: "And 3+3?" },
    { type: "model", response: [{ type: "segment", segmentType: "thought", text: "Again.", ended: true }, "6"] },
    { type: "user", text: "Thanks" },
    { type: "model", response: [] },
  ],
  [
    { type: "system", text: "Use the tools." },
    { type: "user", text: "Weather in Oslo?" },
    {
      type: "model",
      response: [
        { type: "functionCall", name: "weather", description: "The weather in a city", params: { city: "Oslo" }, result: { celsius: 3 }, startsNewChunk: true },
        "It is 3 °C.",
      ],
    },
    { type: "user", text: "And the time?" },
    { type: "model", response: [] },
  ],
];

/** A wrapper's own fields and its renderings of the conversations, with and without tools. */
function fingerprint(wrapper: ChatWrapper): string {
  const fields = JSON.stringify(wrapper, (_key, value) => (typeof value === "function" ? `function ${String(value)}` : value));
  const renderings = CONVERSATIONS.flatMap((chatHistory) =>
    [undefined, FUNCTIONS].map((availableFunctions) => wrapper.generateContextState({ chatHistory, availableFunctions }).contextText.toJSON()),
  );
  return JSON.stringify([fields, renderings]);
}
