-- CNN bots on volunteers: workers say what they can run beyond the engine (ONNX Runtime,
-- CUDA) and which GPU they have; an experiment names what its batches need, and the queue
-- hands them only to workers that have all of it.

-- Capability names (shared::protocol::Capabilities::names): 'onnx', 'cuda'.
ALTER TABLE workers ADD COLUMN capabilities text[] NOT NULL DEFAULT '{}';
ALTER TABLE workers ADD COLUMN gpu_name text;
ALTER TABLE workers ADD COLUMN gpu_memory_mb bigint;

-- What an experiment's batches need, from its bots and its `gpu` flag.
ALTER TABLE experiments ADD COLUMN needs text[] NOT NULL DEFAULT '{}';
