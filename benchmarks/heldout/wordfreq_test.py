TEXT = "The cat's toy. The Cat sat on the mat! Cats and dogs? A dog's life - the dog-days."


def test_words(candidate):
    assert candidate("The Cat's toy, the CAT.") == ["the", "cat", "toy", "the", "cat"]
    assert candidate("dog-days") == ["dog-days"]


def test_word_counts(candidate):
    counts = candidate(TEXT)
    assert counts["cat"] == 2 and counts["dog"] == 1 and "the" not in counts
    assert candidate(TEXT, skip_stop_words=False)["the"] == 4


def test_top_words(candidate):
    assert candidate(TEXT, 2) == ["cat", "cats"]


def test_sentences(candidate):
    assert candidate(TEXT) == ["The cat's toy.", "The Cat sat on the mat!", "Cats and dogs?",
                               "A dog's life - the dog-days."]
