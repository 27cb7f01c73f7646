"""shards: Megatron .bin/.idx shards (writer, megatron), their validation, the manifest and versions."""
