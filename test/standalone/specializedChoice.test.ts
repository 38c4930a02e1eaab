import { type ChatHistoryItem, type ChatWrapper, chatWrappers, specializedChatWrapperTypeNames } from "node-llama-cpp";
import { expect, it } from "vitest";
import { buildSpecialized, specializedChoiceOf } from "../../src/engines/llama/specializedChoice.js";

const history: ChatHistoryItem[] = [
  { type: "system", text: "Be brief." },
  { type: "user", text: "Hi" },
  { type: "model", response: [{ type: "segment", segmentType: "thought", text: "Greet back.", ended: true }, "Hello"] },
  { type: "user", text: "Weather?" },
  { type: "model", response: [] },
];
const render = (wrapper: ChatWrapper) =>
  [undefined, { weather: { description: "Weather", params: { type: "object", properties: { city: { type: "string" } } } } } as const].map((availableFunctions) =>
    JSON.stringify(wrapper.generateContextState({ chatHistory: history, availableFunctions }).contextText.toJSON()),
  );

/** Every settings object a wrapper type's resolution may build it with (node-llama-cpp's option sets), once each. */
function appliedSettingsOf(type: (typeof specializedChatWrapperTypeNames)[number]): Record<string, unknown>[] {
  const Wrapper = chatWrappers[type] as unknown as { _getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate?(): unknown[] };
  const sets = (Wrapper._getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate?.() ?? []).map((set) => (Array.isArray(set) ? (set[1] ?? {}) : (set ?? {})));
  return [...new Map([{}, ...sets].map((settings) => [JSON.stringify(settings), settings as Record<string, unknown>])).values()];
}

it("names the type and settings that rebuild every specialized wrapper the resolution can return, rendering as it does", () => {
  let settingsSeen = 0;
  for (const type of specializedChatWrapperTypeNames) {
    for (const settings of appliedSettingsOf(type)) {
      settingsSeen++;
      const wrapper = buildSpecialized({ type, settings });
      const choice = specializedChoiceOf(wrapper);
      expect(choice, `${type} ${JSON.stringify(settings)}`).toBeDefined();
      expect(choice!.type).toBe(type);
      // Plain JSON: it crosses from the child process as it is.
      expect(JSON.parse(JSON.stringify(choice))).toEqual(choice);
      const rebuilt = buildSpecialized(choice!);
      expect(rebuilt.constructor).toBe(wrapper.constructor);
      expect(render(rebuilt), `${type} ${JSON.stringify(settings)}`).toEqual(render(wrapper));
    }
  }
  // Each of node-llama-cpp 3.22's 17 specialized types, several with many option sets.
  expect(settingsSeen).toBeGreaterThan(30);
});

it("tells apart settings that render differently (a DeepSeek wrapper's function-call syntax)", () => {
  const simplified = specializedChoiceOf(buildSpecialized({ type: "deepSeek", settings: { functionCallingSyntax: "simplified" } }));
  expect(simplified?.settings).toMatchObject({ functionCallingSyntax: "simplified" });
  const original = specializedChoiceOf(buildSpecialized({ type: "deepSeek", settings: { functionCallingSyntax: "original" } }));
  expect(original?.settings).toMatchObject({ functionCallingSyntax: "original" });
});
