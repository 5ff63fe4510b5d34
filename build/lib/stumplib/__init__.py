"""stumplib: models, exact population quantities and trainers for the softmax-attention book."""
