"""Needle keys and values: numbers, UUIDs and two-word keys from our own lists.

RULER draws word keys as ``adjective-noun`` pairs from a large word list; the
lists here are this project's own (short everyday English words), giving
about 25,000 distinct keys. Needle haystacks draw their distractor keys from
the same space, so a sample excludes its real keys from the distractors.
"""

from __future__ import annotations

import random
import uuid

ADJECTIVES = """
able acid aged airy amber ample angry arctic ashen awake bald bare basic
beige bent big bitter black bland blank blue blunt bold bony brave brief
bright brisk broad brown bumpy busy calm candid careful casual cheap chilly
civil clean clear clever close cloudy coarse cold cool cosy crisp crude
cubic curly curved damp dark dear deep dense dim dirty dizzy dry dull
dusty eager early east easy elder empty equal even exact faint fair false
fancy far fast fierce fine firm flat fond formal foul frank free fresh
front frozen full funny fuzzy gentle giant glad glossy golden good grand
gray great green grim gross hairy happy hard harsh hasty heavy hidden high
hollow honest hot huge humble icy idle inner jolly juicy keen kind lame
large late lazy lean level light little live lone long loose loud lovely
low loyal lucky lunar mad main major meek merry mild minor misty modern
moist moral muddy mute narrow near neat new nice noble noisy north numb
odd oily old open oval pale patient plain plump polite poor proud pure
purple quick quiet rapid rare raw ready real red rich rigid ripe rough
round royal rude rural rusty sad safe salty sandy sharp shiny short shy
silent silky silly simple slim slow small smart smooth snowy soft solar
solid sore sour south spare spicy stale steep stiff still stout strange
strict strong sunny super sweet swift tall tame tender thick thin tidy
tight tiny tired total tough true ugly upper urban usual vague vast
violet vivid warm wary weak west wet white whole wide wild windy wise
witty wooden young zesty
""".split()

NOUNS = """
acorn actor anchor angle ankle apple apron arch arrow atlas attic badge
bagel baker ballad bamboo banana banner barn basket beach beacon beard
bell belt bench berry bicycle blanket blossom boat bolt bone boot bottle
bowl branch bread brick bridge brook broom bucket buffalo bugle button
cabin cable camel camera canal candle canoe canyon carpet carrot castle
cedar cellar chain chair chalk cherry chest chimney circle citrus clock
cloud clover coast coffee comet compass copper coral cotton cradle crane
crayon creek cricket crown crystal cup curtain cushion dagger daisy desert
diamond dinner dolphin donkey door dragon drawer drum eagle easel elbow
engine falcon feather fence ferry fiddle field finger flame flute fog
forest fossil fountain fox garden garlic gate glacier glove goat grape
guitar hammer harbor harp hat hawk helmet hill honey horse island ivory
jacket jar jelly jungle kettle key kite ladder lake lamp lantern lemon
lily lion lizard locket magnet mango maple marble meadow melon mirror
mitten monkey moon mosaic motor mountain mouse mushroom needle nest
notebook oak ocean olive orange orchard otter owl oyster paddle palace
panda paper parrot peach pearl pebble pencil pepper piano pigeon pillow
pine planet plate plum pocket pony potato puppet quilt rabbit radio
rainbow raven ribbon river robin rocket rose saddle sail salmon sandal
scarf shadow shell shovel silver sketch sled snail spider spoon squirrel
stable star statue stone storm stream sugar summit swan sword table
teapot temple thimble thistle thunder tiger timber tomato torch tower
tractor trumpet tulip tunnel turtle umbrella valley vase velvet village
violin wagon walnut wand whale wheel whistle willow window wizard wolf
""".split()

KINDS = ("numbers", "words", "uuids")


def random_number(rng: random.Random, digits: int = 7) -> str:
    """A number of exactly ``digits`` digits (RULER: 7)."""
    return str(rng.randint(10 ** (digits - 1), 10**digits - 1))


def random_word_key(rng: random.Random) -> str:
    """An ``adjective-noun`` key."""
    return f"{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}"


def random_uuid(rng: random.Random) -> str:
    """A version-4 UUID drawn from ``rng`` (deterministic, unlike uuid.uuid4)."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def draw(rng: random.Random, kind: str) -> str:
    """One key or value of ``kind`` (numbers, words or uuids)."""
    if kind == "numbers":
        return random_number(rng)
    if kind == "words":
        return random_word_key(rng)
    if kind == "uuids":
        return random_uuid(rng)
    raise ValueError(f"unknown needle type {kind!r}; choose one of {KINDS}")


def draw_distinct(
    rng: random.Random, kind: str, count: int, exclude: set[str] = frozenset()
) -> list[str]:
    """``count`` different draws of ``kind``, none in ``exclude``."""
    out: list[str] = []
    seen = set(exclude)
    while len(out) < count:
        value = draw(rng, kind)
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out
