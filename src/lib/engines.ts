/** The inference engines infermeter knows: the `gen_ai_provider_name` label and the engine collector's alias table. */
export const ENGINES = ['vllm', 'sglang', 'tgi', 'llamacpp', 'trtllm', 'ollama', 'openai'] as const;
export type EngineKind = (typeof ENGINES)[number];
