/**
 * onnxruntime's official Linux and macOS builds (1.29 and later; Hearth ships 1.30) collect
 * telemetry by default: a 1DS uploader to mobile.events.data.microsoft.com, a persistent device
 * id and an offline event cache under ~/.cache/Microsoft/DeveloperTools/.onnxruntime, and an
 * empty /tmp/mat-debug-<pid>.log for every process. A node for a private LAN or an air-gapped
 * site sends nothing anywhere, so Hearth sets ORT_DISABLE_TELEMETRY=1, which onnxruntime reads
 * once, when it initializes (the first session), and which turns all of that off. An operator
 * who set the variable keeps their value. transformers.js sets it too as it loads, but the
 * diffusion worker and the session workers open onnxruntime without it: a node whose first ONNX
 * model was an image model had telemetry on for its whole life (measured: a device id, an event
 * database and the debug log after one load).
 */
export function keepOnnxRuntimeOffline(): void {
  process.env.ORT_DISABLE_TELEMETRY ??= "1";
}
