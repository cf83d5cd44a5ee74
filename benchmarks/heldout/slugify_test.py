def test_slugify(candidate):
    assert candidate("Hello, World!") == "hello-world"
    assert candidate("  Crème brûlée -- the recipe  ") == "creme-brulee-the-recipe"
    assert candidate("???") == "untitled" and candidate("C'est la vie", separator="_") == "c_est_la_vie"
    title = "How to fix the flaky integration tests in our deploy pipeline"
    assert candidate(title, max_length=20) == "how-to-fix-the-flaky"
    assert candidate(title, max_length=19) == "how-to-fix-the"
    assert candidate(title, max_length=15) == "how-to-fix-the"
    assert candidate("Release notes for version two", max_length=14) == "release-notes"
    assert candidate("Supercalifragilistic", max_length=10) == "supercalif"
    for n in range(5, 40):
        slug = candidate(title, max_length=n)
        assert len(slug) <= n and not slug.endswith("-") and title.lower().startswith(slug.replace("-", " "))
