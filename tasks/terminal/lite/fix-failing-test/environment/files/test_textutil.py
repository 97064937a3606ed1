from textutil import slugify

def test_basic():
    assert slugify('Hello, World!') == 'hello-world'

def test_digits():
    assert slugify('a 1 B') == 'a-1-b'
