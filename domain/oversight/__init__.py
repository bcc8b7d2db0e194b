"""The rules of a hold point: who may answer it and who may change what it asks."""
