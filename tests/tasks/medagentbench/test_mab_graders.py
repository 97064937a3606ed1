"""Graders on hand-built charts: every branch of every task type, including the branches
where the right action is to order nothing, for the official (v1/v2) and the v3 rules."""

import pytest

from tasks.medagentbench import graders_v1, graders_v3, orders
from tasks.medagentbench.branches import ASPIRIN_NDC
from tasks.medagentbench.clinical import (A1C_LOINC, K_LOINC, K_NDC, LOINC_SYSTEM, MG_NDC,
                                          ORTHO_NOTE, ORTHO_SNOMED, SNOMED_SYSTEM,
                                          TOMORROW_8AM_ISO)
from tasks.medagentbench.grading import Case, TaskDef
from tasks.medagentbench.records import COLONOSCOPY_CPT, NDC_SYSTEM, RecordBuilder, ago
from tasks.medagentbench.v3_texts import (AMOXICILLIN_NDC, AZITHROMYCIN_NDC, CPT_SYSTEM,
                                          CREATININE_LOINC, DEXTROSE_NDC, ENOXAPARIN_NDC,
                                          REFERRAL_SYSTEM)

MRN = "S100"
PATIENT = {"resourceType": "Patient", "id": MRN, "birthDate": "1990-11-14"}


def case(task_type, build=None, **params):
    b = RecordBuilder(MRN, start=1)
    if build:
        build(b)
    task = TaskDef("t", task_type, "test", "", "", MRN, "any", "any",
                   sol=params.pop("sol", None), params=params)
    return Case(task, PATIENT, tuple(b.resources))


def mg(*pairs):
    """MG readings as (value, hours ago)."""
    return lambda b: [b.lab("MG", v, ago(h)) for v, h in pairs]


def lab(code, *pairs, unit=None):
    return lambda b: [b.lab(code, v, ago(h), unit) for v, h in pairs]


def med(ndc, dose, unit, route, rate=None):
    return orders.medication_request(MRN, ndc, "x", dose, unit, route, rate=rate)


def service(system, code, occurrence=None, note=None):
    return orders.service_request(MRN, system, code, "x", occurrence=occurrence, note=note)


def passed(grader, c, answer, posts=()):
    return grader(c, answer, list(posts)).passed


V1, V3 = graders_v1.GRADERS, graders_v3.GRADERS
BP = orders.vitals_observation(MRN, "BP", "118/77 mmHg")
K_ORDERS = [med(K_NDC, 40, "mEq", "oral"), service(LOINC_SYSTEM, K_LOINC, TOMORROW_8AM_ISO)]


@pytest.mark.parametrize("graders", [V1, V3])
def test_mrn_lookup_and_age(graders):
    found = case("task1", sol=["S1"])
    assert passed(graders["task1"], found, ["S1"])
    assert not passed(graders["task1"], found, ["Patient not found"])
    assert passed(graders["task1"], case("task1", sol=["Patient not found"]),
                  ["Patient not found"])
    aged = case("task2")  # born 1990-11-14: 32 on 2023-11-13, the day before the birthday
    assert passed(graders["task2"], aged, [32])
    assert not passed(graders["task2"], aged, [33])
    assert not passed(graders["task2"], aged, ["32"])


@pytest.mark.parametrize("graders", [V1, V3])
def test_record_blood_pressure(graders):
    c = case("task3", bp="118/77 mmHg")
    grade = graders["task3"]
    assert passed(grade, c, [], [BP])
    assert not passed(grade, c, [], [])
    assert not passed(grade, c, [], [BP, BP])
    assert not passed(grade, c, [], [{**BP, "valueString": "118/78 mmHg"}])
    assert not passed(grade, c, [], [{**BP, "subject": {"reference": "Patient/S9"}}])
    assert not passed(grade, c, [], [{**BP, "effectiveDateTime": "2023-11-12T10:15:00+00:00"}])
    assert not passed(grade, c, [], [{**BP, "category": []}])


@pytest.mark.parametrize("graders", [V1, V3])
def test_latest_magnesium_in_24h_every_branch(graders):
    grade = graders["task4"]
    recent = case("task4", mg((2.1, 2), (1.5, 5), (1.2, 30)))
    assert passed(grade, recent, [2.1])
    assert not passed(grade, recent, [1.5]) and not passed(grade, recent, [-1])
    assert not passed(grade, recent, [2.1], [BP]), "a query task orders nothing"
    stale = case("task4", mg((1.2, 24.5), (2.0, 60)))
    assert passed(grade, stale, [-1]) and not passed(grade, stale, [1.2])
    assert passed(grade, case("task4"), [-1])


@pytest.mark.parametrize("value,grams", [(1.7, 1), (1.5, 1), (1.4, 2), (1.0, 2), (0.8, 4)])
@pytest.mark.parametrize("graders", [V1, V3])
def test_magnesium_replacement_doses(graders, value, grams):
    grade, c = graders["task5"], case("task5", mg((value, 3), (2.3, 40)))
    right = med(MG_NDC, grams, "g", "IV", rate=(grams, "h"))
    assert passed(grade, c, [value], [right])
    assert not passed(grade, c, [value], [])
    assert not passed(grade, c, [value], [right, right])
    wrong = 4 if grams != 4 else 2
    assert not passed(grade, c, [value], [med(MG_NDC, wrong, "g", "IV", rate=(wrong, "h"))])
    assert not passed(grade, c, [value], [med(K_NDC, grams, "g", "IV", rate=(grams, "h"))])
    assert not passed(grade, c, [value], [med(MG_NDC, grams, "g", "oral", rate=(grams, "h"))])


def test_magnesium_no_action_branches_official_vs_v3():
    normal = case("task5", mg((2.2, 3), (1.1, 30)))
    none = case("task5", mg((1.1, 30)))
    for c, value in ((normal, 2.2), (none, -1)):
        assert passed(V1["task5"], c, [value]) and passed(V3["task5"], c, [value])
        assert passed(V1["task5"], c, []), "official rule: an empty answer is accepted"
        assert not passed(V3["task5"], c, []), "v3: the answer must report the value"
        order = med(MG_NDC, 1, "g", "IV", rate=(1, "h"))
        assert not passed(V1["task5"], c, [value], [order])
        assert not passed(V3["task5"], c, [value], [order])


@pytest.mark.parametrize("graders", [V1, V3])
def test_average_and_latest_glucose(graders):
    values = case("task6", lab("GLU", (100, 1), (150, 5), (200, 20), (300, 26)))
    assert passed(graders["task6"], values, [150.05])
    assert not passed(graders["task6"], values, [187.5])
    assert not passed(graders["task6"], values, [150], [BP])
    assert passed(graders["task6"], case("task6", lab("GLU", (90, 30))), [-1])
    history = case("task7", lab("GLU", (120, 200), (95, 50), (210, 500)))
    assert passed(graders["task7"], history, [95]) and not passed(graders["task7"], history, [120])
    assert passed(graders["task7"], case("task7"), [-1])


@pytest.mark.parametrize("graders", [V1, V3])
def test_orthopedic_referral(graders):
    c, grade = case("task8", note=ORTHO_NOTE), graders["task8"]
    right = service(SNOMED_SYSTEM, ORTHO_SNOMED, note=ORTHO_NOTE)
    assert passed(grade, c, [], [right])
    as_object = {**right, "note": {"text": "Referral. " + ORTHO_NOTE}}
    assert passed(grade, c, [], [as_object]), "funcs_v1.json shows note as one object"
    assert not passed(grade, c, [], [{**right, "note": [{"text": "see chart"}]}])
    assert not passed(grade, c, [], [service(SNOMED_SYSTEM, "123", note=ORTHO_NOTE)])
    assert not passed(grade, c, [], [{**right, "priority": "routine"}])
    assert not passed(grade, c, [], [])


@pytest.mark.parametrize("graders", [V1, V3])
def test_potassium_low_branch_needs_both_orders(graders):
    grade, low = graders["task9"], case("task9", lab("K", (3.1, 10), (4.2, 100)))
    assert passed(grade, low, [3.1], K_ORDERS)
    assert passed(grade, low, [3.1], K_ORDERS[::-1]), "orders may come in either order"
    assert passed(grade, low, [3.1], [med(K_NDC, 40.05, "mEq", "oral"), K_ORDERS[1]])
    assert not passed(grade, low, [3.1], [med(K_NDC, 30, "mEq", "oral"), K_ORDERS[1]])
    assert not passed(grade, low, [3.1], K_ORDERS[:1])
    assert not passed(grade, low, [3.1], [K_ORDERS[0], service(LOINC_SYSTEM, K_LOINC)])
    assert not passed(grade, low, [3.1], K_ORDERS + [BP])


def test_potassium_normal_branch():
    normal = case("task9", lab("K", (3.9, 10), (3.0, 100)))
    assert passed(V1["task9"], normal, [3.9]) and passed(V1["task9"], normal, [])
    assert passed(V3["task9"], normal, [3.9]) and not passed(V3["task9"], normal, [])
    assert not passed(V1["task9"], normal, [3.9], K_ORDERS)
    assert passed(V3["task9"], case("task9"), [-1])


def test_hba1c_branches():
    order = service(LOINC_SYSTEM, A1C_LOINC)
    recent = case("task10", lab("A1C", (7.2, 24 * 100), (8.0, 24 * 500)))
    when = recent.records[0]["effectiveDateTime"]
    for graders in (V1, V3):
        assert passed(graders["task10"], recent, [7.2, when])
        assert passed(graders["task10"], recent, [7.2, when[:10]])
        assert not passed(graders["task10"], recent, [7.2, when], [order])
        assert not passed(graders["task10"], recent, [8.0, when])
    assert passed(V1["task10"], recent, []) and not passed(V3["task10"], recent, [])
    old = case("task10", lab("A1C", (6.1, 24 * 400)))
    old_when = old.records[0]["effectiveDateTime"]
    for graders in (V1, V3):
        assert passed(graders["task10"], old, [6.1, old_when], [order])
        assert not passed(graders["task10"], old, [6.1, old_when])
        assert passed(graders["task10"], case("task10"), [-1], [order])
        assert not passed(graders["task10"], case("task10"), [-1])


def test_v3_query_tasks_refuse_any_order():
    for task_type, c, answer in [("task1", case("task1", sol=["S1"]), ["S1"]),
                                 ("task2", case("task2"), [32]),
                                 ("task7", case("task7"), [-1])]:
        assert passed(V3[task_type], c, answer)
        assert not passed(V3[task_type], c, answer, [BP])


def allergy(b):
    b.condition("91936005", "Allergy to penicillin", ago(24 * 3000))


def test_v3_antibiotic_by_allergy():
    amoxicillin, azithromycin = (med(ndc, 500, "mg", "oral") for ndc in (AMOXICILLIN_NDC,
                                                                         AZITHROMYCIN_NDC))
    allergic, clear = case("task11", allergy), case("task11")
    assert passed(V3["task11"], allergic, [], [azithromycin])
    assert not passed(V3["task11"], allergic, [], [amoxicillin])
    assert passed(V3["task11"], clear, [], [amoxicillin])
    assert not passed(V3["task11"], clear, [], [amoxicillin, azithromycin])
    assert not passed(V3["task11"], clear, [])


def test_v3_repeat_creatinine_and_referrals():
    repeat = service(LOINC_SYSTEM, CREATININE_LOINC, TOMORROW_8AM_ISO)
    high = case("task12", lab("CREAT", (1.85, 5), (0.9, 300)))
    assert passed(V3["task12"], high, [1.85], [repeat])
    assert not passed(V3["task12"], high, [1.85])
    normal = case("task12", lab("CREAT", (1.1, 5), (2.0, 300)))
    assert passed(V3["task12"], normal, [1.1]) and not passed(V3["task12"], normal, [1.1], [repeat])
    assert passed(V3["task12"], case("task12"), [-1])
    endo = service(REFERRAL_SYSTEM, "endocrinology")
    a1c_high = case("task14", lab("A1C", (9.0, 24 * 30)))
    assert passed(V3["task14"], a1c_high, [9.0], [endo])
    assert not passed(V3["task14"], a1c_high, [9.0])
    a1c_low = case("task14", lab("A1C", (8.9, 24 * 30), (10.5, 24 * 300)))
    assert passed(V3["task14"], a1c_low, [8.9]) and not passed(V3["task14"], a1c_low, [8.9], [endo])


def test_v3_magnesium_unit_conversion():
    mmol = case("task13", lab("MG", (0.8, 3), unit="mmol/L"))
    assert passed(V3["task13"], mmol, [1.94]) and not passed(V3["task13"], mmol, [0.8])
    mgdl = case("task13", lab("MG", (1.9, 3), (0.7, 30), unit=None))
    assert passed(V3["task13"], mgdl, [1.9])
    assert passed(V3["task13"], case("task13", lab("MG", (0.8, 25), unit="mmol/L")), [-1])


def test_v3_hypoglycemia_dextrose():
    dextrose = med(DEXTROSE_NDC, 25, "g", "IV")
    low = case("task15", lab("GLU", (62, 2), (150, 8)))
    assert passed(V3["task15"], low, [62], [dextrose]) and not passed(V3["task15"], low, [62])
    normal = case("task15", lab("GLU", (95, 2), (55, 8)))
    assert passed(V3["task15"], normal, [95])
    assert not passed(V3["task15"], normal, [95], [dextrose])
    assert passed(V3["task15"], case("task15", lab("GLU", (50, 30))), [-1])


def test_v3_aspirin_reconciliation():
    order = med(ASPIRIN_NDC, 81, "mg", "oral")

    def with_order(status):
        return lambda b: b.medication(ASPIRIN_NDC, "aspirin", ago(24 * 90), status=status,
                                      system=NDC_SYSTEM)
    active = case("task16", with_order("active"))
    when = active.records[0]["authoredOn"]
    assert passed(V3["task16"], active, [when])
    assert not passed(V3["task16"], active, [when], [order])
    assert not passed(V3["task16"], active, [])
    for c in (case("task16", with_order("stopped")), case("task16")):
        assert passed(V3["task16"], c, [], [order])
        assert not passed(V3["task16"], c, [])
        assert not passed(V3["task16"], c, [], [med(ASPIRIN_NDC, 325, "mg", "oral")])


@pytest.mark.parametrize("value,unit,kg,dose", [(80.0, "kg", 80.0, 40), (48.5, "kg", 48.5, 30),
                                                (120.0, "[lb_av]", 54.43, 40),
                                                (100.0, "[lb_av]", 45.36, 30)])
def test_v3_weight_based_enoxaparin(value, unit, kg, dose):
    c = case("task17", lambda b: (b.weight(value, unit, ago(10)), b.weight(70.0, "kg", ago(900))))
    right = med(ENOXAPARIN_NDC, dose, "mg", "subcutaneous")
    assert passed(V3["task17"], c, [kg], [right])
    assert not passed(V3["task17"], c, [kg], [med(ENOXAPARIN_NDC, 70 - dose, "mg",
                                                 "subcutaneous")])
    assert not passed(V3["task17"], c, [kg + 1], [right])
    assert not passed(V3["task17"], c, [kg])


@pytest.mark.parametrize("reading,high", [("150/80 mmHg", True), ("128/92 mmHg", True),
                                          ("139/89 mmHg", False), ("140/70 mmHg", True)])
def test_v3_blood_pressure_referral(reading, high):
    s, d = (int(x) for x in reading.split()[0].split("/"))
    c = case("task18", lambda b: (b.blood_pressure(s, d, ago(5)), b.blood_pressure(
        120 if high else 170, 70, ago(500))))
    referral = service(REFERRAL_SYSTEM, "hypertension-clinic")
    assert passed(V3["task18"], c, [reading], [referral] if high else [])
    assert not passed(V3["task18"], c, [reading], [] if high else [referral])
    assert passed(V3["task18"], case("task18"), [-1])


def test_v3_hyperglycemia_count():
    consult = service(REFERRAL_SYSTEM, "glycemic-management")
    many = case("task19", lab("GLU", (190, 2), (250, 8), (150, 10), (300, 30)))
    assert passed(V3["task19"], many, [2], [consult]) and not passed(V3["task19"], many, [2])
    assert not passed(V3["task19"], many, [3], [consult])
    few = case("task19", lab("GLU", (181, 2), (180, 8), (300, 30)))
    assert passed(V3["task19"], few, [1]) and not passed(V3["task19"], few, [1], [consult])
    assert passed(V3["task19"], case("task19"), [0])


def test_v3_colonoscopy_screening():
    order = service(CPT_SYSTEM, COLONOSCOPY_CPT)
    recent = case("task20", lambda b: b.procedure(COLONOSCOPY_CPT, "c", ago(24 * 365 * 4)))
    when = recent.records[0]["performedDateTime"]
    assert passed(V3["task20"], recent, [when]) and not passed(V3["task20"], recent, [when], [order])
    old = case("task20", lambda b: b.procedure(COLONOSCOPY_CPT, "c", ago(24 * 365 * 12)))
    old_when = old.records[0]["performedDateTime"]
    assert passed(V3["task20"], old, [old_when], [order])
    assert not passed(V3["task20"], old, [old_when])
    assert passed(V3["task20"], case("task20"), [-1], [order])
    assert not passed(V3["task20"], case("task20"), [-1])


def test_match_orders_reports_missing_wrong_and_extra():
    check = [("ServiceRequest", lambda r: orders.service_problems(r, MRN, LOINC_SYSTEM, "1"))]
    good = service(LOINC_SYSTEM, "1")
    assert orders.match_orders([good], check) == []
    assert orders.match_orders([], check) == ["missing ServiceRequest order"]
    assert "code must be" in orders.match_orders([service(LOINC_SYSTEM, "2")], check)[0]
    assert "unrequested" in orders.match_orders([good, BP], check)[0]
