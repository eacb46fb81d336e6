"""Moving data in and out of memory: notes, chat history, and whole databases."""
