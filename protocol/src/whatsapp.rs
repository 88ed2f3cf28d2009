//! How WhatsApp names a person: by phone number (`wa_id`: the number's
//! digits, country code first) or, when someone chose a username and their
//! number is withheld, by business-scoped user id (a BSUID: a two-letter
//! country code, a period and up to 128 letters and digits, like
//! `US.13491208655302741918`; a parent BSUID has `ENT.` after the country
//! code). Both forms may be allowed, written to and replied to; the
//! number's form is [`whatsapp_number`](crate::whatsapp_number).

/// The longest id part of a business-scoped user id.
const MAX_USER_ID_CHARS: usize = 128;

/// A business-scoped user id as WhatsApp writes it, its country code in
/// capitals; `None` when `text` is not one.
pub fn whatsapp_user_id(text: &str) -> Option<String> {
    let text = text.trim();
    let (country, rest) = text.split_once('.')?;
    let country = country.to_ascii_uppercase();
    if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let (parent, id) = match rest.split_once('.') {
        Some((ent, id)) if ent.eq_ignore_ascii_case("ENT") => ("ENT.", id),
        Some(_) => return None,
        None => ("", rest),
    };
    let plausible = (1..=MAX_USER_ID_CHARS).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric());
    plausible.then(|| format!("{country}.{parent}{id}"))
}

/// A person as WhatsApp names them, from how people write it: a phone
/// number (`+1 555 123 4567`, read as its digits) or a business-scoped
/// user id. `None` when it is neither.
pub fn whatsapp_id(text: &str) -> Option<String> {
    whatsapp_user_id(text).or_else(|| crate::whatsapp_number(text))
}

/// Whether the id (as [`whatsapp_id`] gives it) is a phone number, not a
/// business-scoped user id.
pub fn is_whatsapp_number(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
}

/// The id as people read it: a number with its `+`, a user id as it is.
pub fn whatsapp_shown(id: &str) -> String {
    if is_whatsapp_number(id) {
        format!("+{id}")
    } else {
        id.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_read_in_both_forms_and_nothing_else() {
        assert_eq!(
            whatsapp_user_id(" US.13491208655302741918 ").as_deref(),
            Some("US.13491208655302741918")
        );
        assert_eq!(
            whatsapp_user_id("br.1502576394655843").as_deref(),
            Some("BR.1502576394655843")
        );
        assert_eq!(
            whatsapp_user_id("US.ENT.11815799212886844830").as_deref(),
            Some("US.ENT.11815799212886844830")
        );
        for not in [
            "",
            "US.",
            "USA.123",
            "1.123",
            "US.12 34",
            "US.X.123",
            "US.12-34",
            "+15551234567",
        ] {
            assert_eq!(whatsapp_user_id(not), None, "{not}");
        }
        assert_eq!(whatsapp_user_id(&format!("US.{}", "1".repeat(129))), None);
    }

    #[test]
    fn an_id_is_a_number_or_a_user_id_and_shows_as_people_write_it() {
        assert_eq!(
            whatsapp_id("+1 555 123 4567").as_deref(),
            Some("15551234567")
        );
        assert_eq!(whatsapp_id("DE.998877").as_deref(), Some("DE.998877"));
        assert_eq!(whatsapp_id("call me"), None);
        assert!(is_whatsapp_number("15551234567") && !is_whatsapp_number("DE.998877"));
        assert_eq!(whatsapp_shown("15551234567"), "+15551234567");
        assert_eq!(whatsapp_shown("DE.998877"), "DE.998877");
    }
}
